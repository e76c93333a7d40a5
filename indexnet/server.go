package indexnet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/sigverify"
	"github.com/up-pool/up/wire"
)

// ServerConfig configures an index server (a node's Config.Server). Zero
// values take the defaults.
type ServerConfig struct {
	// Table tunes the entry table (expiry, quarantine, l; index.Config
	// applies its own defaults).
	Table index.Config
	// ExpiryInterval is how often expired entries are deleted. Default 30 s.
	ExpiryInterval time.Duration
	// DisableLoops turns off the expiry loop (tests call Expire).
	DisableLoops bool
	// VerifiedCache bounds the listings whose signature is remembered as
	// checked. Default 65536. A listing is forgotten when the last entry
	// holding it is withdrawn or handed over, or when it was not written
	// for the table's entry Expiry (Expire): the cache holds about the
	// listings of the entries held, not those of every job that passed.
	VerifiedCache int
	// QueryLimit is the sustained queries per second one client may ask
	// this node, QueryBurst the burst. Defaults 20 per second and 40.
	QueryLimit float64
	QueryBurst int
}

// Deps is what an index server needs of the node that runs it.
type Deps struct {
	// Endpoint is the node's overlay endpoint, which serves the index
	// protocols. Required.
	Endpoint *overlay.Endpoint
	// Env is the node's clock, its seed (the selection among the oldest
	// l) and its logger.
	Env overlay.Env
}

// ApplyDefaults sets the zero fields of c to their defaults.
func (c *ServerConfig) ApplyDefaults() {
	if c.ExpiryInterval == 0 {
		c.ExpiryInterval = 30 * time.Second
	}
	if c.VerifiedCache == 0 {
		c.VerifiedCache = 65536
	}
	if c.QueryLimit == 0 {
		c.QueryLimit = 20
	}
	if c.QueryBurst == 0 {
		c.QueryBurst = 40
	}
}

// Validate reports the first bad field of c (after ApplyDefaults), naming
// it, in one line.
func (c *ServerConfig) Validate() error {
	switch {
	case c.ExpiryInterval < 0:
		return fmt.Errorf("index server config: ExpiryInterval %s is negative", c.ExpiryInterval)
	case c.VerifiedCache < 1:
		return fmt.Errorf("index server config: VerifiedCache %d is below 1", c.VerifiedCache)
	case !(c.QueryLimit > 0):
		return fmt.Errorf("index server config: QueryLimit %v is not a positive rate", c.QueryLimit)
	case c.QueryBurst < 1:
		return fmt.Errorf("index server config: QueryBurst %d is below 1", c.QueryBurst)
	}
	return nil
}

// Server is a node's share of the index. Safe for concurrent use: one
// mutex guards the table, which one goroutine at a time owns.
type Server struct {
	cfg ServerConfig
	env overlay.Env
	ep  *overlay.Endpoint

	mu       sync.Mutex
	table    *index.Table
	rng      *rand.Rand
	verified map[[32]byte]verifiedListing
	sigs     *sigverify.Once            // project signatures verified here: a batch's root once per batch
	certs    map[string]certs.Identity  // project certificates by project name
	closest  func(keyspace.Pos) peer.ID // the node's view, for redirects; nil: accept all
	limiter  *overlay.RateLimiter       // per client identity

	mEntries prometheus.GaugeFunc
	mWrites  *prometheus.CounterVec
	mQueries *prometheus.CounterVec

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New starts the index server on a node's endpoint: cfg's defaults
// applied, then validated.
func New(deps Deps, cfg ServerConfig) (*Server, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Endpoint == nil {
		return nil, errors.New("indexnet: Deps.Endpoint is nil")
	}
	deps.Env.ApplyDefaults()
	ep := deps.Endpoint
	s := &Server{
		limiter: overlay.NewRateLimiter(cfg.QueryLimit, cfg.QueryBurst, deps.Env.Now),
		cfg:     cfg, env: deps.Env, ep: ep, table: index.NewTable(cfg.Table),
		rng:      rand.New(rand.NewPCG(deps.Env.Seed, keyspace.Seed([]byte(ep.ID()), 5))),
		verified: map[[32]byte]verifiedListing{},
		sigs:     sigverify.NewOnce(4096),
		certs:    map[string]certs.Identity{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.registerMetrics(ep.Metrics().Registry)
	nodes := []certs.Role{certs.RoleNode}
	ep.Handle(wire.ProtoIndexWrite, wire.MaxIndexFrame, nodes, s.handleWrite)
	ep.Handle(wire.ProtoIndexWithdraw, wire.MaxIndexFrame, nodes, s.handleWithdraw)
	ep.Handle(wire.ProtoIndexQuery, 4<<10, nil, s.handleQuery)
	ep.Handle(wire.ProtoIndexQuerySkip, wire.MaxQuerySkipFrame, nil, s.handleQuerySkip)
	s.registerExplain()
	if !cfg.DisableLoops {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			t := time.NewTicker(cfg.ExpiryInterval)
			defer t.Stop()
			for {
				select {
				case <-s.ctx.Done():
					return
				case <-t.C:
					s.Expire()
				}
			}
		}()
	}
	return s, nil
}

func (s *Server) registerMetrics(reg *prometheus.Registry) {
	s.mEntries = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "up_index_entries", Help: "Index entries held by this node.",
	}, func() float64 { return float64(s.Len()) })
	s.mWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_index_writes_total", Help: "Index entries written, by result (new, rewrite, refused).",
	}, []string{"result"})
	s.mQueries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_index_queries_total", Help: "Index queries answered, by kind (select, page).",
	}, []string{"kind"})
	reg.MustRegister(s.mEntries, s.mWrites, s.mQueries)
}

// Close stops the expiry loop.
func (s *Server) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

func (s *Server) nowMS() int64 { return s.env.Now().UnixMilli() }

// Len is the number of entries held (the load-balancing n_index).
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.Len()
}

// Keywords returns the entries held per primary keyword.
func (s *Server) Keywords() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.Keywords()
}

// verifiedListing is a listing whose signature was checked, and when it
// was last written (ms).
type verifiedListing struct {
	l    *job.Listing
	used int64
}

// Expire deletes entries not rewritten in time, and forgets the verified
// listings not written for as long: a held entry's listing is rewritten
// every T_rewrite, within the entry expiry.
func (s *Server) Expire() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMS()
	for h, v := range s.verified {
		if now-v.used >= s.table.Config().Expiry {
			delete(s.verified, h)
		}
	}
	return s.table.Expire(now)
}

func (s *Server) handleWrite(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.IndexWriteRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return &wire.IndexWriteResponse{Results: s.Write(from.Peer, req.Entries, req.Certs, req.Handoff)}, nil
}

// SetView gives the server its node's view of the keyspace: closest names
// the node nearest to a raw position. With it the server redirects a
// writer whose entry's point now belongs to another node (one that moved
// in) instead of holding the entry itself.
func (s *Server) SetView(closest func(keyspace.Pos) peer.ID) {
	s.mu.Lock()
	s.closest = closest
	s.mu.Unlock()
}

// Write verifies and holds entries sent by node from (the local form of
// the write protocol), one result per entry. A hand-over (from a node that
// moves or splits its load) is held without the redirect check and keeps
// the writer it names; otherwise from becomes the entry's writer, the one
// node whose withdrawal removes it.
func (s *Server) Write(from peer.ID, entries []wire.IndexWrite, certDERs [][]byte, handoff bool) []wire.StoreResult {
	now := s.env.Now()
	offered := map[string][]byte{}
	for _, der := range certDERs {
		offered[string(job.CertRef(der))] = der
	}
	out := make([]wire.StoreResult, len(entries))
	for i, e := range entries {
		var point keyspace.Pos
		copy(point[:], e.Point)
		if !handoff && len(e.Point) == 32 {
			s.mu.Lock()
			closest := s.closest
			s.mu.Unlock()
			if closest != nil {
				if p := closest(point); p != "" && p != s.ep.ID() {
					s.dropRedirected(from, e, now.UnixMilli())
					out[i] = wire.StoreResult{Status: wire.StatusMoved, Msg: p.String()}
					continue
				}
			}
		}
		l, err := s.verifyListing(e.Listing, offered, now)
		if err == nil && !l.Allows(e.Keyword) {
			err = fmt.Errorf("listing of job %x does not allow keyword %q", l.Job, e.Keyword)
		}
		if err != nil {
			out[i] = wire.StoreResult{Status: wire.StatusUnauthorized, Msg: err.Error()}
			s.mWrites.WithLabelValues("refused").Inc()
			continue
		}
		// Queries see the job's keywords and the one it is listed under
		// (a finished keyword is not among the listing's).
		kws := l.Keywords
		if i, found := slices.BinarySearch(kws, e.Keyword); !found {
			kws = slices.Insert(slices.Clone(kws), i, e.Keyword)
		}
		s.mu.Lock()
		reps := make([]string, len(e.Replicas))
		for i, r := range e.Replicas {
			reps[i] = string(r)
		}
		writer := string(from)
		if handoff {
			writer = string(e.Writer)
		}
		isNew := s.table.Put(index.Entry{Keyword: e.Keyword, Job: l.Job, Project: l.Project, Created: l.Created, Keywords: kws,
			Replicas: reps, Point: point, Listing: e.Listing, Writer: writer, Place: l.Place}, now.UnixMilli())
		if e.Reset {
			s.table.Unquarantine(e.Keyword, l.Job)
		}
		s.mu.Unlock()
		if isNew {
			s.mWrites.WithLabelValues("new").Inc()
		} else {
			s.mWrites.WithLabelValues("rewrite").Inc()
		}
	}
	return out
}

// dropRedirected removes the entry a write redirected elsewhere, when
// this node holds it with the same listing and its author is the writer
// from: the writer now keeps it at the node it was redirected to, and
// withdraws it there, so a copy left here would be served and harvested
// until it expired, long after its job was claimed or collected.
func (s *Server) dropRedirected(from peer.ID, e wire.IndexWrite, now int64) {
	_, l, err := job.DecodeListing(e.Listing)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, held := s.table.Get(e.Keyword, l.Job)
	if held && bytes.Equal(old.Listing, e.Listing) && s.table.Withdraw(e.Keyword, l.Job, string(from), now) {
		s.forgetListingLocked(old)
	}
}

func (s *Server) handleWithdraw(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.IndexWithdrawRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return &wire.IndexWithdrawResponse{Removed: uint32(s.Withdraw(from.Peer, req.Items))}, nil
}

// Withdraw removes the entries node by is the author of, and the final
// ones whoever wrote them (the local form of the withdraw protocol).
func (s *Server) Withdraw(by peer.ID, items []wire.IndexRef) int {
	now := s.nowMS()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, it := range items {
		author := string(by)
		if it.Final {
			author = ""
		}
		e, held := s.table.Get(it.Keyword, it.Job)
		if s.table.Withdraw(it.Keyword, it.Job, author, now) {
			n++
			if held {
				s.forgetListingLocked(e)
			}
		}
	}
	return n
}

// forgetListingLocked forgets the verified listing of entry e, just
// removed, unless another entry of its job here holds it (under another
// of its keywords, or its finished keyword): a withdrawn job's listing is
// seldom written here again, and a listing is checked once per entry
// held, not kept for every job that passed through. s.mu is held.
func (s *Server) forgetListingLocked(e index.Entry) {
	if len(e.Listing) == 0 {
		return
	}
	for _, kw := range append(slices.Clip(e.Keywords), job.FinishedKeyword(e.Project), job.TrickleKeyword(e.Project)) {
		if o, ok := s.table.Get(kw, e.Job); ok && bytes.Equal(o.Listing, e.Listing) {
			return
		}
	}
	delete(s.verified, sha256.Sum256(e.Listing))
}

func (s *Server) handleQuery(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	if from.Role() == certs.RoleClient && !s.limiter.Allow(string(from.Identity.PublicKey)) {
		return nil, overlay.StatusErr(wire.StatusRateLimited, fmt.Errorf("queries from client %q over %.0f/s", from.Identity.Name, s.cfg.QueryLimit))
	}
	var req wire.IndexQueryRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	resp, err := s.Query(&req)
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return resp, nil
}

// Query answers a query (the local form of the query protocol).
func (s *Server) Query(req *wire.IndexQueryRequest) (*wire.IndexQueryResponse, error) {
	return s.query(req, nil, declines{})
}

// query answers a query; a worker's (not paging) passes over the jobs in
// skip and first ends the quarantine of those it declines.
func (s *Server) query(req *wire.IndexQueryRequest, skip [][]byte, d declines) (*wire.IndexQueryResponse, error) {
	q, err := index.Parse(req.Query)
	if err != nil {
		return nil, err
	}
	required := false
	for _, kw := range q.Required() {
		required = required || kw == req.Keyword
	}
	if !required {
		return nil, fmt.Errorf("%w: keyword %q is not one every match of %q must have", index.ErrBadQuery, req.Keyword, q)
	}
	now := s.nowMS()
	resp := &wire.IndexQueryResponse{}
	var hits []index.Entry
	s.mu.Lock()
	if req.Page {
		var after *index.Cursor
		if len(req.AfterJob) > 0 {
			after = &index.Cursor{Created: req.AfterCreated, Job: req.AfterJob}
		}
		hits, resp.More = s.table.Page(q, req.Keyword, after, int(req.N), now)
	} else {
		s.declineLocked(req.Keyword, d, now)
		hits = s.table.SelectSkipping(q, req.Keyword, int(req.N), now, s.rng, skipper(skip))
	}
	s.mu.Unlock()
	kind := "select"
	if req.Page {
		kind = "page"
	}
	s.mQueries.WithLabelValues(kind).Inc()
	for _, h := range hits {
		hit := wire.IndexHit{Job: h.Job, Project: h.Project, Created: h.Created, Keywords: h.Keywords, Place: h.Place}
		for _, r := range h.Replicas {
			hit.Replicas = append(hit.Replicas, []byte(r))
		}
		resp.Hits = append(resp.Hits, hit)
	}
	return resp, nil
}

// Points returns the points of every entry held (zero for entries written
// without one): the index items a load split divides.
func (s *Server) Points() []keyspace.Pos {
	now := s.nowMS()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]keyspace.Pos, 0, s.table.Len())
	s.table.Each(now, func(e index.Entry) bool {
		out = append(out, e.Point)
		return true
	})
	return out
}

// Take removes and returns the live entries keep selects (a hand-over).
func (s *Server) Take(take func(index.Entry) bool) []index.Entry {
	now := s.nowMS()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []index.Entry
	s.table.Each(now, func(e index.Entry) bool {
		if len(e.Listing) > 0 && take(e) {
			out = append(out, e)
		}
		return true
	})
	for _, e := range out {
		s.table.Withdraw(e.Keyword, e.Job, "", now)
		s.forgetListingLocked(e) // once the job's last entry here is gone
	}
	return out
}

// Send hands entries over to the nodes target chooses, as hand-over
// writes with the certificates they need; it returns how many were taken.
// Entries a target refuses or that cannot be sent are lost to this node
// and come back with their writers' next rewrite.
func (s *Server) Send(ctx context.Context, entries []index.Entry, target func(index.Entry) peer.ID) int {
	byNode := map[peer.ID][]index.Entry{}
	for _, e := range entries {
		if t := target(e); t != "" {
			byNode[t] = append(byNode[t], e)
		}
	}
	sent := 0
	for t, es := range byNode {
		for start := 0; start < len(es); start += wire.MaxIndexWrites {
			part := es[start:min(start+wire.MaxIndexWrites, len(es))]
			req := &wire.IndexWriteRequest{Handoff: true}
			projects := map[string]bool{}
			for _, e := range part {
				w := wire.IndexWrite{Keyword: e.Keyword, Listing: e.Listing, Point: append([]byte(nil), e.Point[:]...), Writer: []byte(e.Writer)}
				for _, r := range e.Replicas {
					w.Replicas = append(w.Replicas, []byte(r))
				}
				req.Entries = append(req.Entries, w)
				if !projects[e.Project] {
					projects[e.Project] = true
					s.mu.Lock()
					id, ok := s.certs[e.Project]
					s.mu.Unlock()
					if ok && len(req.Certs) < wire.MaxCertsPerMsg {
						req.Certs = append(req.Certs, id.Cert.Raw)
					}
				}
			}
			var resp wire.IndexWriteResponse
			if t == s.ep.ID() {
				resp.Results = s.Write(s.ep.ID(), req.Entries, req.Certs, true)
			} else if err := s.ep.Call(ctx, t, wire.ProtoIndexWrite, req, wire.MaxIndexFrame, &resp); err != nil {
				continue
			}
			for _, r := range resp.Results {
				if r.Status == wire.StatusOK {
					sent++
				}
			}
		}
	}
	return sent
}

// Has reports whether this index node holds the entry of the job under
// the keyword.
func (s *Server) Has(keyword string, jobKey []byte) bool {
	_, ok := s.Entry(keyword, jobKey)
	return ok
}

// Entry returns, for diagnostics, this index node's entry of the job
// under the keyword.
func (s *Server) Entry(keyword string, jobKey []byte) (index.Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.Get(keyword, jobKey)
}
