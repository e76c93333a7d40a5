package indexwriter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/indexnet"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/wire"
)

// Config configures a Writer. Zero values take the defaults.
type Config struct {
	// RewriteMin and RewriteMax bound T_rewrite: each entry is rewritten
	// after a uniform random time in between (to the millisecond).
	// Defaults 10 min and RewriteMin + 5 min; RewriteMax at least
	// RewriteMin.
	RewriteMin, RewriteMax time.Duration
	// Tick is how often due rewrites and pending changes are processed.
	// Default 10 s.
	Tick time.Duration
	// RPCTimeout bounds one write or withdraw. Default 10 s.
	RPCTimeout time.Duration
	// Listers is how many of a job's closest live nodes may list it: the
	// closest at once, the i-th next (i ≥ 1) as a backup once the job has
	// been listable there (ready or finished) for i × BackupDelay, so f
	// faulty closest replicas that keep nothing or list nothing cannot
	// hide a job for ever. Default claim.Faults(r) + 1, r the DHT's
	// replication: 2 at r = 5.
	Listers int
	// BackupDelay is how long a backup lister waits (see Listers). A job
	// listed by its closest is usually claimed or collected before then,
	// so honest runs see no second entry. Default RewriteMin (10 min).
	BackupDelay time.Duration
	// FullRound is how often a round visits every job the node holds
	// although its view of the nodes has not changed; between those, a
	// round visits only the jobs whose rewrite or backup wait is due, those
	// that changed, and those a failed write or a hand-on left (due.go).
	// Default RewriteMin (10 min).
	FullRound time.Duration
	// DisableLoops turns off the background rounds (tests call Round).
	DisableLoops bool
}

// Deps is what a Writer needs of the node that runs it.
type Deps struct {
	// Pool is the node's job pool, whose jobs the writer lists. Required.
	Pool *pool.Pool
	// DHT finds a job's closest nodes and the index nodes. Required.
	DHT *dht.DHT
	// Regions are the node's views of keyword regions, where entries are
	// written. Required.
	Regions *indexclient.Regions
	// Local is the node's own index server, written to without an RPC
	// when this node holds the entry; nil: always by RPC.
	Local *indexnet.Server
	// Env is the node's clock and its seed (the rewrite jitter).
	Env overlay.Env
}

// ApplyDefaults sets the zero fields of c to their defaults; a zero
// Listers is left for New, which knows the replication.
func (c *Config) ApplyDefaults() {
	if c.RewriteMin == 0 {
		c.RewriteMin = 10 * time.Minute
	}
	if c.RewriteMax == 0 {
		c.RewriteMax = c.RewriteMin + 5*time.Minute
	}
	if c.Tick == 0 {
		c.Tick = 10 * time.Second
	}
	if c.RPCTimeout == 0 {
		c.RPCTimeout = 10 * time.Second
	}
	if c.BackupDelay == 0 {
		c.BackupDelay = c.RewriteMin
	}
	if c.FullRound == 0 {
		c.FullRound = c.RewriteMin
	}
}

// Validate reports the first bad field of c (after ApplyDefaults), naming
// it, in one line.
func (c *Config) Validate() error {
	switch {
	case c.RewriteMin < 0:
		return fmt.Errorf("index writer config: RewriteMin %s is negative", c.RewriteMin)
	case c.RewriteMax < c.RewriteMin:
		return fmt.Errorf("index writer config: RewriteMax %s is below RewriteMin %s", c.RewriteMax, c.RewriteMin)
	case c.Tick < 0:
		return fmt.Errorf("index writer config: Tick %s is negative", c.Tick)
	case c.RPCTimeout < 0:
		return fmt.Errorf("index writer config: RPCTimeout %s is negative", c.RPCTimeout)
	case c.Listers < 0:
		return fmt.Errorf("index writer config: Listers %d is negative", c.Listers)
	case c.BackupDelay < 0:
		return fmt.Errorf("index writer config: BackupDelay %s is negative", c.BackupDelay)
	case c.FullRound < 0:
		return fmt.Errorf("index writer config: FullRound %s is negative", c.FullRound)
	}
	return nil
}

// validate reports a missing dependency.
func (d *Deps) validate() error {
	switch {
	case d.Pool == nil:
		return errors.New("indexwriter: Deps.Pool is nil")
	case d.DHT == nil:
		return errors.New("indexwriter: Deps.DHT is nil")
	case d.Regions == nil:
		return errors.New("indexwriter: Deps.Regions is nil")
	}
	return nil
}

// Writer keeps the index entries of the jobs a node is the closest to (or,
// after a delay, among the Listers closest: see Config.Listers):
// written when the job arrives or becomes ready, rewritten every
// T_rewrite to the same index node, withdrawn when it is claimed or when
// another node becomes its closest (once that node was handed the job,
// pool.ListingHeld); a finished job is listed under its
// project's finished keyword until collected. It remembers where it wrote
// (thesis 3.3.3), so withdrawing costs no lookup.
type Writer struct {
	cfg     Config
	env     overlay.Env
	pool    *pool.Pool
	d       *dht.DHT
	ep      *overlay.Endpoint
	regions *indexclient.Regions
	local   *indexnet.Server

	// busy serialises Flush and Round: a caller's Flush waits for a
	// background flush already sending, instead of finding the dirty set
	// empty and returning before those writes landed.
	busy sync.Mutex

	mu      sync.Mutex
	rng     *rand.Rand
	state   map[string]*written
	dirty   map[string]bool
	claimed map[string]bool  // jobs whose entries' quarantine is reset when next written ready: left Ready (onChange), or a claim attempt ended unclaimed (Unquarantine)
	backups map[string]int64 // ms: since when this node, a backup lister of the job, has seen it listable
	swept   map[string]sweep // jobs whose entries this node withdrew at their points, as their closest, in that state
	kick    chan struct{}
	rounds  roundState // what lets a round visit only the jobs due (due.go)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// written is where one job's entries are.
type written struct {
	where map[string]placed // keyword → where its entry is
	next  int64             // ms: when to rewrite
}

// placed is an entry's index node and the point of the region it was
// placed at (sent along, so the index node can split its load and hand
// entries over by point).
type placed struct {
	at    peer.ID
	point keyspace.Pos
}

// New starts keeping the pool's entries written: cfg's defaults applied,
// then validated.
func New(deps Deps, cfg Config) (*Writer, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	deps.Env.ApplyDefaults()
	p, d := deps.Pool, deps.DHT
	if cfg.Listers == 0 {
		cfg.Listers = claim.Faults(d.Replication()) + 1
	}
	w := &Writer{
		cfg: cfg, env: deps.Env, pool: p, d: d, ep: d.Endpoint(), regions: deps.Regions, local: deps.Local,
		rng:     rand.New(rand.NewPCG(deps.Env.Seed, keyspace.Seed([]byte(d.ID()), 7))),
		state:   map[string]*written{},
		dirty:   map[string]bool{},
		claimed: map[string]bool{},
		backups: map[string]int64{},
		swept:   map[string]sweep{},
		kick:    make(chan struct{}, 1),
		rounds:  newRoundState(),
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	p.OnChange(w.onChange)
	if !cfg.DisableLoops {
		w.wg.Add(1)
		go w.loop()
	}
	return w, nil
}

// onChange marks a changed job for the next flush and keeps the claimed
// set: a job is in it from leaving Ready until it is Ready again (the
// writer then resets its entries' quarantine), finished or collected
// (never Ready again) or gone from the pool, so the set is bounded by the
// jobs held claimed, not by the jobs that ever passed through the node.
func (w *Writer) onChange(key []byte, st job.State, deleted bool) {
	w.mu.Lock()
	w.dirty[string(key)] = true
	switch {
	case deleted || st.Phase == job.Finished || st.Phase == job.Collected:
		delete(w.claimed, string(key))
	case st.Phase != job.Ready:
		w.claimed[string(key)] = true
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Unquarantine has the entries of a ready job served again at once: a
// claim attempt on it ended without a claim (claimnet's OnFreed), so the
// quarantine its index node began when it served the entry to that client
// would only idle the job. The next flush rewrites the entries with a
// reset of the quarantine, if this node writes them.
func (w *Writer) Unquarantine(key []byte) {
	w.mu.Lock()
	w.dirty[string(key)] = true
	w.claimed[string(key)] = true
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Close stops the background rounds.
func (w *Writer) Close() error {
	w.cancel()
	w.wg.Wait()
	return nil
}

func (w *Writer) loop() {
	defer w.wg.Done()
	t := time.NewTicker(w.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
			w.Flush(w.ctx)
		case <-t.C:
			w.Round(w.ctx)
		}
	}
}

// WriteStats counts what a round or a flush did: entries written,
// rewritten, withdrawn and failed, and the jobs visited (Full: every job
// held).
type WriteStats struct {
	Written, Rewritten, Withdrawn, Failed int
	Visited                               int
	Full                                  bool
}

// Flush processes the jobs that changed since the last flush.
func (w *Writer) Flush(ctx context.Context) WriteStats {
	if w.pool.Behind() {
		return WriteStats{} // the changes stay dirty until the pool caught up
	}
	w.busy.Lock()
	defer w.busy.Unlock()
	w.mu.Lock()
	keys := w.dirty
	w.dirty = map[string]bool{}
	w.mu.Unlock()
	if len(keys) == 0 {
		return WriteStats{}
	}
	helds, gone := w.lookup(keys)
	st := w.process(ctx, helds, gone, nil)
	st.Visited = len(keys)
	return st
}

// listed reports whether this writer has entries of job k written.
func (w *Writer) listed(k string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.state[k]
	return st != nil && len(st.where) > 0
}

// dropDeadTargets forgets the entries written to index nodes that no
// longer answer, so this round places them anew instead of waiting for
// T_rewrite.
func (w *Writer) dropDeadTargets(ctx context.Context, probe *dht.Prober) {
	w.mu.Lock()
	targets := map[peer.ID]bool{}
	for _, st := range w.state {
		for _, pl := range st.where {
			if pl.at != w.d.ID() {
				targets[pl.at] = true
			}
		}
	}
	w.mu.Unlock()
	dead := map[peer.ID]bool{}
	for at := range targets {
		if !probe.Alive(ctx, at) {
			dead[at] = true
		}
	}
	if len(dead) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.state {
		for kw, pl := range st.where {
			if dead[pl.at] {
				delete(st.where, kw)
				w.regions.Invalidate(kw)
			}
		}
	}
}

// rank is this node's place among the live nodes nearest pos in its view
// (0: the closest), or -1 when it is not among the Listers nearest: peers
// ahead of it that are marked dead (or, with a prober, fail a probe) do
// not count. It walks NearestLocal per position; rounds use rankPass,
// which gives the same answer in one pass, and the tests hold it to
// this reference.
func (w *Writer) rank(ctx context.Context, pos keyspace.Pos, probe *dht.Prober) int {
	self := w.d.ID()
	live := 0
	for _, p := range w.d.NearestLocal(pos, closestAmong) {
		if p == self {
			return live
		}
		if w.d.IsMarkedDead(p) {
			continue
		}
		if probe != nil && !probe.Alive(ctx, p) {
			continue
		}
		if live++; live >= w.cfg.Listers {
			return -1
		}
	}
	return -1
}

// backupDue reports whether this node, at rank among a job's closest live
// nodes, lists it as a backup now: once it has seen the job listable
// (ready or finished) for rank × BackupDelay on its own clock. The wait
// restarts whenever the job leaves those phases or this node's rank
// changes to 0 or beyond the listers.
func (w *Writer) backupDue(k string, rank int, st job.State, now int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rank <= 0 || (st.Phase != job.Ready && st.Phase != job.Finished) {
		delete(w.backups, k)
		return false
	}
	since, ok := w.backups[k]
	if !ok {
		w.backups[k] = now
		since = now
	}
	at := since + int64(rank)*w.cfg.BackupDelay.Milliseconds()
	if now < at {
		w.schedule(k, at, dueBackup) // the wait's end is a round's due work
	}
	return now >= at
}

func (w *Writer) jitter() int64 {
	lo, hi := w.cfg.RewriteMin.Milliseconds(), w.cfg.RewriteMax.Milliseconds()
	return lo + w.rng.Int64N(hi-lo+1)
}

// writeResult is what happened to one written entry: accepted, or
// redirected to the node now closest to its point.
type writeResult struct {
	ok    bool
	moved peer.ID
}

// write sends entries to index node at (or to the local server). A node
// that fails is marked dead and its regions' views dropped.
func (w *Writer) write(ctx context.Context, at peer.ID, ops []op) []writeResult {
	out := make([]writeResult, len(ops))
	for start := 0; start < len(ops); start += wire.MaxIndexWrites {
		part := ops[start:min(start+wire.MaxIndexWrites, len(ops))]
		req := &wire.IndexWriteRequest{}
		refs := map[string]bool{}
		for _, o := range part {
			req.Entries = append(req.Entries, wire.IndexWrite{Keyword: o.keyword, Listing: o.listing, Replicas: o.replicas,
				Reset: o.reset, Point: append([]byte(nil), o.point[:]...)})
			if !refs[string(o.certRef)] && len(req.Certs) < wire.MaxCertsPerMsg {
				if der, found := w.pool.Cert(o.certRef); found {
					refs[string(o.certRef)] = true
					req.Certs = append(req.Certs, der)
				}
			}
		}
		var results []wire.StoreResult
		if at == w.d.ID() && w.local != nil {
			results = w.local.Write(w.ep.ID(), req.Entries, req.Certs, false)
		} else {
			var resp wire.IndexWriteResponse
			cctx, cancel := context.WithTimeout(ctx, w.cfg.RPCTimeout)
			err := w.ep.Call(cctx, at, wire.ProtoIndexWrite, req, wire.MaxIndexFrame, &resp)
			cancel()
			if err != nil {
				w.d.MarkDead(at)
				for _, o := range part {
					w.regions.Invalidate(o.keyword)
				}
				continue
			}
			results = resp.Results
		}
		for i := range part {
			if i >= len(results) {
				continue
			}
			switch results[i].Status {
			case wire.StatusOK:
				out[start+i].ok = true
			case wire.StatusMoved:
				if p, err := peer.Decode(results[i].Msg); err == nil {
					out[start+i].moved = p
				}
			}
		}
	}
	return out
}

// withdraw removes entries from index node at.
func (w *Writer) withdraw(ctx context.Context, at peer.ID, ops []op) error {
	items := make([]wire.IndexRef, len(ops))
	for i, o := range ops {
		items[i] = wire.IndexRef{Keyword: o.keyword, Job: []byte(o.key), Final: o.final}
	}
	if at == w.d.ID() && w.local != nil {
		w.local.Withdraw(w.ep.ID(), items)
		return nil
	}
	for start := 0; start < len(items); start += wire.MaxIndexWrites {
		req := &wire.IndexWithdrawRequest{Items: items[start:min(start+wire.MaxIndexWrites, len(items))]}
		cctx, cancel := context.WithTimeout(ctx, w.cfg.RPCTimeout)
		err := w.ep.Call(cctx, at, wire.ProtoIndexWithdraw, req, 1024, &wire.IndexWithdrawResponse{})
		cancel()
		if err != nil {
			return err // the entries expire at the index node anyway
		}
	}
	return nil
}

// Entries reports how many entries the writer keeps written.
func (w *Writer) Entries() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, st := range w.state {
		n += len(st.where)
	}
	return n
}

// Placed tells, for diagnostics, where this writer last placed the job's
// entries: keyword → index node.
func (w *Writer) Placed(key []byte) map[string]peer.ID {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]peer.ID{}
	if st := w.state[string(key)]; st != nil {
		for kw, pl := range st.where {
			out[kw] = pl.at
		}
	}
	return out
}
