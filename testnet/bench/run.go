package bench

import (
	"bytes"
	"context"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// Run runs the whole job lifecycle in one process: opts.Nodes nodes on
// loopback TCP (full libp2p stack), a project and clients running a
// zero-work built-in application; the project submits jobs (r acks each),
// the nodes write their index entries, the clients query, claim, confirm
// and send results to the job's nodes, the nodes list the finished jobs,
// the project harvests, validates and collects. It measures throughput,
// CPU, RPCs, lookups, latency, bytes and memory per job.
func Run(ctx context.Context, o Options) (Report, error) {
	o.defaults()
	r := &benchRun{o: o, claimTimes: newDurationSample(o.Seed), rep: Report{Nodes: o.Nodes, R: o.R, Clients: o.Clients, Slots: o.Slots, ClaimMany: o.ClaimMany, Jobs: o.Jobs, Units: o.Jobs / o.Copies,
		Copies: o.Copies, Keywords: o.Keywords, Exec: o.Exec, OfferedRate: o.Rate, HarvestEveryS: o.HarvestEvery.Seconds(), MinRPCsPerJob: 4*o.R + o.Keywords + 4}}
	if err := o.Validate(); err != nil {
		return r.rep, err
	}
	r.logf = testnet.LineLogger(o.Log)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	r.cancel = cancel
	defer r.tearDown()

	if err := r.setUp(ctx); err != nil {
		return r.rep, err
	}
	r.startMeasuring()
	if err := r.startClients(ctx); err != nil {
		return r.rep, err
	}
	runErr := r.runProject(ctx)
	m1 := r.stop()
	if runErr != nil {
		if o.Inspect != nil {
			o.Inspect(r.net, r.ledger)
		}
		return r.rep, runErr
	}

	r.fillRates()
	if err := r.writeProfiles(); err != nil {
		return r.rep, err
	}
	r.splitProfiledCPU()
	r.countRPCs(m1)
	r.countClaims()
	if err := r.readLedger(); err != nil {
		return r.rep, err
	}
	if o.Inspect != nil {
		o.Inspect(r.net, r.ledger)
	}
	r.countHeld()
	if o.TCollect > 0 {
		r.awaitEmptyStores(ctx)
		if o.AfterEmpty != nil {
			o.AfterEmpty(r.net)
		}
	}
	r.measureWireAndMemory()
	return r.rep, nil
}

// benchRun is one Run's shared state: its options and report, the
// parties it started, the clients' and the project's counters, and the
// baselines the figures are measured from.
type benchRun struct {
	o      Options
	rep    Report // written by the harvester until it ends; Errors under errMu
	logf   func(format string, args ...any)
	cancel context.CancelFunc // ends the run, as its timeout does
	// closers close what the run set up, in the order it was set up;
	// tearDown runs them the last first.
	closers []func()

	net    *testnet.Network
	p      *project.Project
	ledger *project.Ledger
	agents []*agent.Agent // the clients'

	// The clients, and the times of the claims they won.
	stopClients context.CancelFunc
	wg          sync.WaitGroup
	cls         []*client.Client
	claimMu     sync.Mutex
	claimTimes  *durationSample

	// The project's submitter and harvester.
	submitted, harvested    atomic.Int64
	errMu                   sync.Mutex
	submitWall, harvestWall time.Duration
	heap                    heapTrack
	lastHeapProfile         int64 // jobs harvested at the last mid-run heap profile

	// The steady phase, first submission to last harvest.
	m0        counters
	prof      *bytes.Buffer // the CPU profile; nil when not sampled
	cpu0, cpu time.Duration
	t0        time.Time
	elapsed   time.Duration
}

// onTearDown has tearDown call closer, before the closers registered
// earlier (as a deferred call would be).
func (r *benchRun) onTearDown(closer func()) {
	r.closers = append(r.closers, closer)
}

// tearDown closes what the run set up, the last first.
func (r *benchRun) tearDown() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// addErr keeps the first 20 errors the parties reported in the report.
func (r *benchRun) addErr(err error) {
	r.errMu.Lock()
	if len(r.rep.Errors) < 20 {
		r.rep.Errors = append(r.rep.Errors, err.Error())
	}
	r.errMu.Unlock()
}

// parties are the project's agent and the clients'.
func (r *benchRun) parties() []*agent.Agent {
	return append([]*agent.Agent{r.p.Agent()}, r.agents...)
}

// stop ends the steady phase: it reads the clock and the CPU time, stops
// the clients and waits for them, stops the CPU profile, counts the jobs
// submitted and returns the counters at the end.
func (r *benchRun) stop() counters {
	r.elapsed = time.Since(r.t0)
	r.cpu = testkit.CPUTime() - r.cpu0
	r.stopClients()
	r.wg.Wait()
	if r.prof != nil {
		pprof.StopCPUProfile()
	}
	m1 := benchCounters(r.net, r.parties())
	r.rep.Submitted = int(r.submitted.Load())
	return m1
}
