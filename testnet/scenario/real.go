package scenario

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/indexnet"
	"github.com/up-pool/up/indexwriter"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/loadbalance"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"math/rand/v2"
)

// realRun is one scenario run on real nodes: a project submitting at the
// offered rate, open-loop claim attempts at the same rate spread over a
// few client parties (the simulator's clients), results after the
// workload's idle time or job length, the project harvesting every
// HarvestEvery, and, for churn, nodes killed and restarted.
type realRun struct {
	o       Options
	p       Periods
	balance bool
	dir     string
	logf    func(string, ...any)

	net     *testnet.Network
	proj    *project.Project
	ledger  *project.Ledger
	workers []*party
	t0      time.Time

	acked, claimed, finished, harvested atomic.Int64
	// held counts the distinct jobs won and not given back (heldJobs):
	// the claim phase ends when it reaches the jobs submitted, not when
	// the wins do (a job given back and won again counts twice there).
	held                                atomic.Int64
	heldJobs                            map[string]bool
	failedAttempts, pending             atomic.Int64
	lastProgress                        atomic.Int64 // unix ms of the last claim, result or harvest
	submitDone, claimsDone, resultsDone atomic.Bool

	mu      sync.Mutex
	gt      map[string]*gtClaim // job key: the latest won claim (the clients' view)
	failBy  map[string]int      // failed claim attempts by reason
	lookBy  map[string]int64    // lookup RPCs sent by every party, by purpose (dht.Config.OnLookup)
	doubles int
	running []*wonClaim // static: won claims waiting for the results phase
	errs    []string
	nerrs   int

	// closers close what the run set up, in the order it was set up;
	// tearDown runs them the last first.
	closers []func()
}

// gtClaim is the ground truth of a job's claim, as the simulator keeps it.
type gtClaim struct {
	client int
	until  time.Time
	ended  bool
}

// party is one of the scenario's open-loop clients: the simulator's
// client, which claims at the offered rate and runs a job when the
// workload says, so not a client.Client.
type party struct {
	a       *agent.Agent
	claimer *claimclient.Claimer
	query   string
}

// wonClaim is a claim a client won, with the spec it fetched.
type wonClaim struct {
	client int
	w      *party
	cl     *claimclient.Claim
	signed *job.Signed
	spec   *job.Spec
}

func (rr *realRun) addErr(format string, args ...any) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.nerrs++
	if len(rr.errs) < 20 {
		rr.errs = append(rr.errs, fmt.Sprintf(format, args...))
	}
}

func (rr *realRun) progressed() { rr.lastProgress.Store(time.Now().UnixMilli()) }

// since is the time since the first submission, in seconds.
func (rr *realRun) since() float64 { return time.Since(rr.t0).Seconds() }

// options are the network's options: mocknet, loops on, the shortened
// periods; per-client rate limits are out of the way (the simulator has
// none).
func (rr *realRun) options() testnet.Options {
	o, p := rr.o, rr.p
	opts := testnet.Options{Nodes: o.Nodes, Transport: testnet.Mocknet, Dir: rr.dir, Seed: o.Seed, PoolLoops: true,
		Configure: func(_ int, cfg *node.Config) {
			cfg.Claim.TClaim, cfg.Claim.TCert = p.TClaim, p.TCert
			cfg.Claim.Limit, cfg.Claim.Burst = 1e9, 1<<30
		}}
	opts.DHT.Replication = o.R
	opts.DHT.LookupCacheTTL = p.LookupCache
	opts.DHT.OnLookup = func(purpose string, rpcs int64) {
		rr.mu.Lock()
		rr.lookBy[purpose] += rpcs
		rr.mu.Unlock()
	}
	opts.Adversary = o.Adversary
	opts.Pool = pool.Config{RepublishInterval: (p.RepublishMin + p.RepublishMax) / 2,
		RepublishJitter: (p.RepublishMax - p.RepublishMin) / 2, ReplicaExpiry: p.ReplicaExpiry,
		TCollect: p.TCollect, ExpiryInterval: p.ExpirySweep}
	opts.Index.Server = indexnet.ServerConfig{Table: index.Config{Expiry: p.IndexExpiry.Milliseconds(), Quarantine: p.Quarantine.Milliseconds()},
		ExpiryInterval: p.ExpirySweep, QueryLimit: 1e9, QueryBurst: 1 << 30}
	opts.IndexWriter = indexwriter.Config{RewriteMin: p.RewriteMin, RewriteMax: p.RewriteMax, Tick: p.WriterTick}
	opts.Index.RegionTTL = p.RegionTTL
	if rr.balance {
		// Interval ± half: BalanceMin..BalanceMax. Splits deeper than 24
		// bits are left alone: grinding one takes over a core-second, and
		// every node shares this process's cores.
		opts.Balance = node.BalanceConfig{Interval: (p.BalanceMin + p.BalanceMax) / 2, MaxGrindBits: 24,
			Params: loadbalance.Params{CoolDown: p.CoolDown.Milliseconds(), MinMoveInterval: p.CoolDown.Milliseconds()}}
	}
	return opts
}

// run sets the network up, runs the workload and measures it.
func (rr *realRun) run(ctx context.Context) (Figures, []SecondRow, error) {
	o := rr.o
	fig := Figures{Side: "real", NodesStart: o.Nodes, LostNoReplica: -1, LogDoubles: -1}
	wallStart := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	rr.gt, rr.failBy, rr.lookBy, rr.heldJobs = map[string]*gtClaim{}, map[string]int{}, map[string]int64{}, map[string]bool{}
	defer rr.tearDown()
	if err := rr.setUp(ctx); err != nil {
		return fig, nil, err
	}
	rr.logf("  %d nodes, a project and %d clients up on mocknet in %s", o.Nodes, o.Clients, time.Since(wallStart).Round(time.Millisecond))

	window := time.Duration(1<<62 - 1)
	if o.dynamic() {
		window = o.Duration
	}
	smp := newSampler(rr.net, window)
	smp.sample(0, rr) // baseline
	rr.t0 = time.Now()
	smp.last = rr.t0
	rr.progressed()

	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }() // before the network closes
	rr.startWorkload(runCtx, &wg)
	runErr := rr.watch(ctx, smp)
	span := time.Since(rr.t0)
	smp.sample(rr.since(), rr)
	stop()
	wg.Wait()

	fig.Span, fig.Wall = span, time.Since(wallStart)
	fig.Window = min(window, span)
	rr.countFigures(&fig, smp)
	rr.loadFigures(&fig)
	if err := rr.countLost(&fig); err != nil {
		rr.addErr("%v", err)
	}
	if fig.Lost > 0 {
		rr.logf("  %d jobs submitted and never harvested; the first of them:\n%s%s", fig.Lost,
			rr.net.Unharvested(rr.ledger, scenarioProject, 3), rr.indexDiag(ctx))
	}
	reduceRows(&fig, smp.rows, fig.Window)
	smp.perJob(&fig)
	fig.PeakRSSMiB = float64(testkit.PeakRSS()) / (1 << 20)
	smp.costFigures(&fig)
	fig.Errors = rr.keptErrors()
	return fig, smp.rows, runErr
}

// keptErrors are the errors the run kept, and a line counting those it
// saw beyond them.
func (rr *realRun) keptErrors() []string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	errs := rr.errs
	if rr.nerrs > len(rr.errs) {
		errs = append(errs, fmt.Sprintf("… %d more", rr.nerrs-len(rr.errs)))
	}
	return errs
}

// onTearDown has tearDown call closer, before the closers registered
// earlier (as a deferred call would be).
func (rr *realRun) onTearDown(closer func()) { rr.closers = append(rr.closers, closer) }

// tearDown closes what the run set up, the last first.
func (rr *realRun) tearDown() {
	for i := len(rr.closers) - 1; i >= 0; i-- {
		rr.closers[i]()
	}
}

// setUp starts the nodes, the project (its nonces seeded, and safe for
// concurrent submissions), its ledger and the client parties.
func (rr *realRun) setUp(ctx context.Context) error {
	o := rr.o
	net, err := testnet.Start(ctx, rr.options())
	if err != nil {
		return fmt.Errorf("start %d nodes: %w", o.Nodes, err)
	}
	rr.net = net
	rr.onTearDown(func() { net.Close() })
	if rr.proj, err = net.NewProject(ctx, scenarioProject); err != nil {
		return fmt.Errorf("start the project: %w", err)
	}
	rr.onTearDown(func() { rr.proj.Agent().Close() })
	// Submissions run concurrently (open loop): the nonce source must
	// take turns.
	var s [32]byte
	copy(s[:], fmt.Appendf(nil, "scenario nonces %d", o.Seed))
	rr.proj.SetRand(&lockedReader{r: rand.NewChaCha8(s)})
	if rr.ledger, err = project.OpenLedger(filepath.Join(rr.dir, "ledger.db")); err != nil {
		return fmt.Errorf("open the ledger: %w", err)
	}
	rr.onTearDown(func() { rr.ledger.Close() })
	attrs := client.Attributes{OS: runtime.GOOS, Arch: runtime.GOARCH}
	for i := range o.Clients {
		a, err := net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("client%d", i+1))
		if err != nil {
			return fmt.Errorf("start client %d: %w", i+1, err)
		}
		rr.onTearDown(func() { a.Close() })
		rr.workers = append(rr.workers, &party{a: a, claimer: claimclient.NewClaimer(a.Endpoint(), a.DHT(), nil, 0),
			query: client.QueryFor(scenarioProject, attrs)})
	}
	return nil
}

// startWorkload starts the submitter, the harvester, the claims and
// results driver and, for churn, a churner per node, each running until
// ctx ends; wg counts them and what the driver starts.
func (rr *realRun) startWorkload(ctx context.Context, wg *sync.WaitGroup) {
	goRun := func(f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
		}()
	}
	goRun(rr.submitter)
	goRun(rr.harvester)
	goRun(func(ctx context.Context) { rr.driver(ctx, goRun) })
	if rr.o.churn() {
		for i := range rr.o.Nodes {
			goRun(func(ctx context.Context) { rr.churn(ctx, i) })
		}
	}
}

// watch samples every second, logging progress every 5 s, until the
// workload is done: every job submitted harvested and every result sent,
// or, once submissions, claims and results are done, nothing claimed,
// finished or harvested for the workload's idle time. It returns an
// error when ctx ends first.
func (rr *realRun) watch(ctx context.Context, smp *sampler) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	idle := rr.idle()
	lastLog := time.Now()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("harvested %d of %d jobs before the time-out: %w", rr.harvested.Load(), rr.acked.Load(), ctx.Err())
		case <-tick.C:
		}
		smp.sample(rr.since(), rr)
		if time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			rr.logf("  %6.0f s: %d submitted, %d claimed, %d finished, %d harvested; %d nodes up", rr.since(),
				rr.acked.Load(), rr.claimed.Load(), rr.finished.Load(), rr.harvested.Load(), len(rr.net.Live()))
		}
		if !rr.submitDone.Load() {
			continue
		}
		if rr.harvested.Load() >= rr.acked.Load() && rr.resultsDone.Load() {
			return nil
		}
		quiet := time.Since(time.UnixMilli(rr.lastProgress.Load()))
		if rr.claimsDone.Load() && rr.resultsDone.Load() && rr.pending.Load() == 0 && quiet > idle {
			rr.logf("  nothing claimed, finished or harvested for %s: stopping", quiet.Round(time.Second))
			return nil
		}
	}
}

// countFigures fills the nodes up at the end, the job counts, the failed
// attempts, the double claims in the clients' view and, from smp, in the
// nodes' claim logs.
func (rr *realRun) countFigures(fig *Figures, smp *sampler) {
	fig.NodesEnd = len(rr.net.Live())
	fig.Submitted, fig.Claimed = int(rr.acked.Load()), int(rr.claimed.Load())
	fig.Finished, fig.Harvested = int(rr.finished.Load()), int(rr.harvested.Load())
	fig.FailedAttempts = int(rr.failedAttempts.Load())
	rr.mu.Lock()
	fig.DoubleClaims = rr.doubles
	fig.FailedBy = maps.Clone(rr.failBy)
	// A claim call that failed over a stale hint tries again at once
	// (its near refresh, a lookup): those inner attempts count too.
	inner := 0
	for _, w := range rr.workers {
		st := w.claimer.Stats()
		inner += st.Attempts - (st.Won + st.Lost + st.Unknown + st.Failed)
	}
	if inner > 0 {
		fig.FailedAttempts += inner
		fig.FailedBy["stale replica set, tried again at once"] = inner
	}
	fig.LookupBy = map[string]float64{}
	for k, v := range rr.lookBy {
		fig.LookupBy[k] = float64(v) / float64(max(fig.Submitted, 1))
	}
	rr.mu.Unlock()
	fig.LogDoubles = smp.logDoubles()
	if d := smp.doubleDetail(); len(d) > 0 {
		rr.mu.Lock() // first among the errors kept: what a trace starts from
		rr.errs, rr.nerrs = append(d, rr.errs...), rr.nerrs+len(d)
		rr.mu.Unlock()
	}
}

// loadFigures fills the live nodes' moves and balance reactions and, when
// balancing, the terms of their load figures at the end.
func (rr *realRun) loadFigures(fig *Figures) {
	var rates []float64
	par := loadbalance.Params{}
	par.ApplyDefaults()
	for _, nd := range rr.net.Live() {
		fig.Moves += nd.Moves()
		fig.Reactions += nd.Reactions()
		if rr.balance {
			l := nd.Load()
			rates = append(rates, par.WRate*l.Rate)
			fig.ItemTermMax = max(fig.ItemTermMax, par.WIndex*float64(l.IndexEntries)+par.WJob*float64(l.ClosestJobs))
		}
	}
	if len(rates) > 0 {
		fig.RateTermMedian, fig.RateTermMax = medianOf(rates), slices.Max(rates)
	}
}

// lockedReader is an io.Reader safe for concurrent use.
type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

// countLost counts the jobs the ledger holds as submitted and never
// harvested, and of them those no live node holds.
func (rr *realRun) countLost(fig *Figures) error {
	rows, err := rr.ledger.DB().Query(`SELECT s.signed FROM jobs j JOIN specs s ON s.job = j.id WHERE j.state = ?`, project.StateSubmitted)
	if err != nil {
		return fmt.Errorf("ledger: unharvested jobs: %w", err)
	}
	defer rows.Close()
	fig.LostNoReplica = 0
	for rows.Next() {
		var signed []byte
		if err := rows.Scan(&signed); err != nil {
			return fmt.Errorf("ledger: unharvested jobs: %w", err)
		}
		fig.Lost++
		s, _, err := job.Decode(signed)
		if err != nil {
			return fmt.Errorf("ledger: decode a job: %w", err)
		}
		if len(rr.net.Holders(s.Key())) == 0 {
			fig.LostNoReplica++
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ledger: unharvested jobs: %w", err)
	}
	var unacked int
	if err := rr.ledger.DB().QueryRow(`SELECT COUNT(*) FROM jobs WHERE state = ?`, project.StatePrepared).Scan(&unacked); err == nil && unacked > 0 {
		rr.addErr("%d jobs never acknowledged by r replicas (not counted as submitted)", unacked)
	}
	return nil
}
