package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/sim"
)

// Names are the scenarios Run knows: the simulator's presets (issue 9),
// shortened. loadbalance runs the dynamic workload twice, balancing off
// and on.
var Names = []string{"static", "dynamic", "churn", "churn-dynamic", "loadbalance"}

// scenarioProject is the scenarios' project name, and so their index
// keyword (the thesis' "LHC").
const scenarioProject = "lhc"

// scenarioApp is the zero-work application the scenario's jobs run:
// hashchain with n = 0 (the bench's).
const scenarioApp = "hashchain"

// Options configure Run. Zero values take the defaults.
// Every duration is wall time on the real nodes and virtual time in the
// simulator: both run the same shortened parameters.
type Options struct {
	Scenario string // one of Names; required
	Nodes    int    // default 32
	// Jobs is the static workloads' job count. Default 200.
	Jobs int
	// Rate is the jobs submitted per second, and the claim attempts
	// started per second (the simulator's open-loop clients). Default 10.
	Rate float64
	// Duration is the dynamic workloads' submission time. Default 60 s.
	Duration time.Duration
	// JobLength is a dynamic job's compute time. Default 10 s.
	JobLength time.Duration
	// Gap is the static workloads' idle time between the last submission
	// and the first claim (thesis 1 h). Default 5 s.
	Gap time.Duration
	// RunIdle is the static workloads' idle time between the last claim
	// and the first result (thesis 12 h). Default 10 s.
	RunIdle time.Duration
	// Lead is how long after the first submission dynamic claims start.
	// Default 2 s.
	Lead time.Duration
	// Clients is the number of client parties the real run's claim
	// attempts take turns on. Default 8.
	Clients int
	// Scale divides the production protocol periods (republish, rewrite,
	// index expiry and quarantine, balancing interval and cool-down,
	// T_collect, replica expiry, lookup cache, region views): 60 runs a
	// minute of protocol time per second. Default 60.
	Scale float64
	// ChurnLife is the churn scenarios' mean node lifetime, and mean down
	// time (exponential). Default the simulator's 24 h divided by Scale.
	ChurnLife time.Duration
	R         int    // replication r; default 5
	Seed      uint64 // default 1
	// Dir holds the real runs' networks and ledgers. Required.
	Dir string
	// Timeout bounds each real run, setup included. Default 15 min.
	Timeout time.Duration
	// Log receives progress lines; nil: none.
	Log io.Writer
	// Adversary makes some real nodes Byzantine and some clocks wrong.
	Adversary testnet.Adversary
}

func (o *Options) defaults() {
	if o.Nodes == 0 {
		o.Nodes = 32
	}
	if o.Jobs == 0 {
		o.Jobs = 200
	}
	if o.Rate == 0 {
		o.Rate = 10
	}
	if o.Duration == 0 {
		o.Duration = 60 * time.Second
	}
	if o.JobLength == 0 {
		o.JobLength = 10 * time.Second
	}
	if o.Gap == 0 {
		o.Gap = 5 * time.Second
	}
	if o.RunIdle == 0 {
		o.RunIdle = 10 * time.Second
	}
	if o.Lead == 0 {
		o.Lead = 2 * time.Second
	}
	if o.Clients == 0 {
		o.Clients = 8
	}
	if o.Scale == 0 {
		o.Scale = 60
	}
	if o.ChurnLife == 0 {
		o.ChurnLife = time.Duration(float64(24*time.Hour) / o.Scale).Round(time.Second)
	}
	if o.R == 0 {
		o.R = 5
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Timeout == 0 {
		o.Timeout = 15 * time.Minute
	}
}

// MaxNodes bounds the real runs: every node lives in this process.
const MaxNodes = 2000

// Validate reports the first bad option, in one line.
func (o Options) Validate() error {
	o.defaults()
	switch {
	case !slices.Contains(Names, o.Scenario):
		return fmt.Errorf("unknown scenario %q (want one of %s)", o.Scenario, strings.Join(Names, ", "))
	case o.Dir == "":
		return errors.New("scenario: no directory")
	case o.R < 1 || o.R > 8:
		return fmt.Errorf("r %d out of 1..8", o.R)
	case o.Nodes < o.R || o.Nodes > MaxNodes:
		return fmt.Errorf("nodes %d out of %d..%d (at least r = %d)", o.Nodes, o.R, MaxNodes, o.R)
	case o.Jobs < 1 || o.Jobs > 1_000_000:
		return fmt.Errorf("jobs %d out of 1..1000000", o.Jobs)
	case !(o.Rate > 0 && o.Rate <= 1000):
		return fmt.Errorf("rate %v out of (0, 1000] jobs/s", o.Rate)
	case o.Duration < time.Second || o.Duration > 24*time.Hour:
		return fmt.Errorf("duration %v out of 1s..24h", o.Duration)
	case o.JobLength < 0 || o.Gap < 0 || o.RunIdle < 0 || o.Lead < 0:
		return errors.New("job length, gap, run idle and lead must not be negative")
	case o.Clients < 1 || o.Clients > 256:
		return fmt.Errorf("clients %d out of 1..256", o.Clients)
	case !(o.Scale >= 1 && o.Scale <= 3600):
		return fmt.Errorf("scale %v out of 1..3600", o.Scale)
	case o.ChurnLife < time.Second:
		return fmt.Errorf("churn lifetime %v below 1s", o.ChurnLife)
	case o.Timeout < 0:
		return fmt.Errorf("timeout %v is negative", o.Timeout)
	}
	return nil
}

// dynamic reports whether the scenario's workload is the dynamic one.
func (o Options) dynamic() bool {
	return o.Scenario == "dynamic" || o.Scenario == "churn-dynamic" || o.Scenario == "loadbalance"
}

// churn reports whether nodes crash and come back.
func (o Options) churn() bool { return strings.HasPrefix(o.Scenario, "churn") }

// Periods are the protocol parameters both sides run: the production
// values divided by Scale, with a floor where a period is a bound on
// round trips rather than a protocol period (T_claim, the writer's tick,
// the expiry sweeps, the project's harvest interval).
type Periods struct {
	RepublishMin, RepublishMax time.Duration // production 20–30 min
	RewriteMin, RewriteMax     time.Duration // 10–15 min
	WriterTick                 time.Duration // 10 s
	IndexExpiry                time.Duration // 16 min
	Quarantine                 time.Duration // 2 min
	ReplicaExpiry              time.Duration // 1 h
	TCollect                   time.Duration // 2 h
	ExpirySweep                time.Duration // pool 10 s, index 30 s
	TClaim                     time.Duration // 15 s
	TCert                      time.Duration // 1 min: an accepted claim's wait for its certificate
	TFinish                    time.Duration // static 48 h; dynamic 4 × job length
	BalanceMin, BalanceMax     time.Duration // 20–60 min
	CoolDown                   time.Duration // 21 min
	LookupCache                time.Duration // 90 s
	RegionTTL                  time.Duration // 5 min
	HarvestEvery               time.Duration // 30 s
}

// periods derives the shortened protocol parameters.
func (o Options) periods() Periods {
	sc := func(d, floor time.Duration) time.Duration {
		v := time.Duration(float64(d) / o.Scale).Round(time.Millisecond)
		return max(v, floor)
	}
	p := Periods{
		RepublishMin: sc(20*time.Minute, 0), RepublishMax: sc(30*time.Minute, 0),
		RewriteMin: sc(10*time.Minute, 0), RewriteMax: sc(15*time.Minute, 0),
		WriterTick:  sc(10*time.Second, time.Second),
		IndexExpiry: sc(16*time.Minute, 0), Quarantine: sc(2*time.Minute, 0),
		ReplicaExpiry: sc(time.Hour, 0), TCollect: sc(2*time.Hour, 0),
		ExpirySweep: sc(10*time.Second, time.Second),
		TClaim:      sc(15*time.Second, 3*time.Second),
		TCert:       sc(time.Minute, 3*time.Second),
		BalanceMin:  sc(20*time.Minute, 0), BalanceMax: sc(60*time.Minute, 0),
		CoolDown:    sc(21*time.Minute, 0),
		LookupCache: sc(90*time.Second, 0), RegionTTL: sc(5*time.Minute, 0),
		HarvestEvery: sc(30*time.Second, time.Second),
	}
	if o.dynamic() {
		p.TFinish = max(4*o.JobLength, 4*p.TClaim)
	} else {
		p.TFinish = sc(48*time.Hour, time.Minute)
	}
	return p
}

// simConfig is the simulator's run of the same scenario, with the same
// shortened parameters.
func (o Options) simConfig(balance bool) sim.Config {
	p := o.periods()
	c := sim.Config{Name: o.Scenario, Workload: sim.Static, Nodes: o.Nodes, Seed: o.Seed,
		Jobs: o.Jobs, Rate: o.Rate, Gap: o.Gap, RunIdle: o.RunIdle, Keyword: scenarioProject,
		R: o.R, TClaim: p.TClaim, TCert: p.TCert, TFinish: p.TFinish, TCollect: p.TCollect, Quarantine: p.Quarantine,
		IndexExpiry: p.IndexExpiry, RewriteMin: p.RewriteMin, RewriteMax: p.RewriteMax, WriterTick: p.WriterTick,
		ReplicaExpiry: p.ReplicaExpiry, RepublishMin: p.RepublishMin, RepublishMax: p.RepublishMax,
		HarvestEvery: p.HarvestEvery, Balance: balance, BalanceMin: p.BalanceMin, BalanceMax: p.BalanceMax,
		CoolDown: p.CoolDown, LookupCache: p.LookupCache, RegionTTL: p.RegionTTL,
		// The real stack: kad-dht's α is 10 (dht.Config.Concurrency), k 20;
		// the project sends one job at a time, which never crawls
		// (project.CrawlMinJobs), so it places from its routing table.
		Alpha: 10, K: 20, CrawlInterval: -1,
		// Mocknet links have no latency: what is left is the process's
		// own scheduling, a millisecond or two.
		LatencyMedian: 2 * time.Millisecond,
		Interval:      time.Second,
	}
	if o.dynamic() {
		c.Workload, c.Duration, c.JobLength, c.Lead = sim.Dynamic, o.Duration, o.JobLength, o.Lead
	}
	if o.churn() {
		c.ChurnLife, c.ChurnDown = o.ChurnLife, o.ChurnLife
		c.ChurnRestart = true // the real nodes restart with their identity and data (Network.Restart)
	}
	if c.Workload == sim.Static {
		// As the simulator's default: stop well after the results phase
		// should have ended, should some jobs never be collected.
		phase := time.Duration(float64(o.Jobs) / o.Rate * float64(time.Second))
		c.Limit = 3*phase + o.Gap + o.RunIdle + 10*p.RewriteMax + time.Minute
	}
	return c
}

// Figures are one side's figures for one run. RPC figures are RPCs nodes
// received per second (wall seconds for the real nodes, simulated seconds
// for the simulator), over the measurement window.
type Figures struct {
	Side   string        // "real" or "sim"
	Span   time.Duration // how long the run went on (real: wall, setup excluded; sim: virtual)
	Window time.Duration // what the RPC figures cover
	Wall   time.Duration // wall time the run took, setup included

	NodesStart, NodesEnd int
	Submitted            int // jobs the project stored on r replicas
	Claimed              int // claims won
	Finished             int // results sent
	Harvested            int // results the project recorded (sim: collected)
	// The same four counts at the end of the RPC window (the real
	// dynamic runs drain after it; otherwise they are the counts above).
	SubmittedInWindow, ClaimedInWindow, FinishedInWindow, HarvestedInWindow int
	// Lost: real, jobs the project's ledger holds as submitted and never
	// harvested by the end of the run; sim, jobs no live node held before
	// they were collected (its ground truth). LostNoReplica: of the real
	// run's lost jobs, those no live node holds (-1: not measured).
	Lost, LostNoReplica int
	// DoubleClaims: a client won a claim while another client's claim on
	// the job was live (both sides, from the clients' view). LogDoubles:
	// jobs whose permanent claims in the nodes' claim logs name two
	// clients, releases excepted (real only; -1: not measured).
	DoubleClaims, LogDoubles int
	Moves                    int
	// Reactions are balances started by a load piggy-backed on another
	// RPC (real only; -1: not measured).
	Reactions int
	// RateTerm and ItemTerm split the nodes' load figures (thesis 3.4)
	// at the end: the request-rate term WRate·rate (median and largest
	// over nodes) and the items term WIndex·entries + WJob·closest jobs
	// (largest). Real, balancing runs only.
	RateTermMedian, RateTermMax, ItemTermMax float64
	FailedAttempts                           int // claim attempts that did not win (each retried up to 5 times)
	// FailedBy are the failed attempts by reason.
	FailedBy map[string]int

	MeanRPC, MeanRPCNoLookup float64 // mean over seconds of the mean over live nodes
	PeakMax, MedianMax       float64 // busiest node's RPC/s: highest and median second
	PeakMaxNoLookup          float64 // the same, lookups not counted
	MedianMaxNoLookup        float64
	MedianMaxOverMean        float64 // median over seconds of busiest/mean
	// The same over the kinds the simulator models only.
	MeanRPCModelled, MedianMaxModelled, PeakMaxModelled float64
	LookupShare                                         float64 // lookup RPCs / all RPCs
	PeakIndexMax                                        float64 // most index entries on one node
	// RPCsPerJob are the RPCs nodes received in the window per job
	// submitted, by kind: lookup, job, index, claim, lb (and, real only,
	// ping: liveness probes; other: admission, CRL).
	RPCsPerJob map[string]float64
	// ByProtocol are the real run's RPCs per job by protocol.
	ByProtocol map[string]float64
	// LookupBy are the lookup RPCs (FIND_NODE requests and near
	// questions) sent per job submitted, by what they were for
	// (dht.WithPurpose on the real side, the simulator's lookup reasons).
	LookupBy   map[string]float64
	PeakRSSMiB float64 // real: the process's peak RSS so far
	// SampleMS and SampleMaxMS are the mean and longest time one
	// once-a-second reading of every node's counters took (real only).
	SampleMS, SampleMaxMS float64
	Errors                []string
}

// SecondRow is one second of a run.
type SecondRow struct {
	T                     float64 // s since the first submission
	Nodes                 int
	RPCMean               float64
	RPCMeanNoLookup       float64
	RPCMax                float64
	RPCMaxNoLookup        float64
	RPCMaxNoIndexNoLookup float64
	// RPCMeanModelled and RPCMaxModelled count only the kinds the
	// simulator models (no pings, hellos, CRL fetches); on the simulator's
	// side they are RPCMean and RPCMax.
	RPCMeanModelled, RPCMaxModelled float64
	LookupRPC, TotalRPC             float64 // whole network, per s
	IndexMax                        int
	Moves                           int
	Submitted, Claimed              int
	Finished, Harvested             int
}

// VariantRun is one variant of a scenario on both sides.
type VariantRun struct {
	Variant   string // "" or "balancing off" / "balancing on"
	Balance   bool
	Real, Sim Figures
	RealRows  []SecondRow
	SimRows   []SecondRow
	SimConfig sim.Config
}

// Report is what Run measured.
type Report struct {
	Options Options // defaults applied (Log and Dir as given)
	Periods Periods
	Runs    []VariantRun
	Wall    time.Duration
}

// Run runs a shortened scenario on opts.Nodes real nodes in this
// process (mocknet, protocol periods scaled down) and the same scenario
// with the same parameters in the simulator, and reports both side by
// side. The loadbalance scenario runs both sides twice, balancing off and
// on.
func Run(ctx context.Context, o Options) (Report, error) {
	o.defaults()
	rep := Report{Options: o, Periods: o.periods()}
	if err := o.Validate(); err != nil {
		return rep, err
	}
	start := time.Now()
	variants := []bool{o.Scenario == "loadbalance"}
	if o.Scenario == "loadbalance" {
		variants = []bool{false, true}
	}
	logf := testnet.LineLogger(o.Log)
	for i, bal := range variants {
		run := VariantRun{Balance: bal}
		if o.Scenario == "loadbalance" {
			run.Variant = map[bool]string{false: "balancing off", true: "balancing on"}[bal]
		}
		sc := o.simConfig(bal)
		run.SimConfig = sc
		logf("simulating %s%s: %d nodes", o.Scenario, suffix(run.Variant), o.Nodes)
		fig, rows, err := runSim(ctx, sc)
		if err != nil {
			return rep, fmt.Errorf("simulate %s: %w", o.Scenario, err)
		}
		run.Sim, run.SimRows = fig, rows
		logf("real run %s%s: %d nodes on mocknet", o.Scenario, suffix(run.Variant), o.Nodes)
		rr := &realRun{o: o, p: rep.Periods, balance: bal, dir: filepath.Join(o.Dir, fmt.Sprintf("run%d", i+1)), logf: logf}
		fig, rows, err = rr.run(ctx)
		run.Real, run.RealRows = fig, rows
		rep.Runs = append(rep.Runs, run)
		if err != nil {
			rep.Wall = time.Since(start)
			return rep, fmt.Errorf("real run of %s%s: %w", o.Scenario, suffix(run.Variant), err)
		}
	}
	rep.Wall = time.Since(start)
	return rep, nil
}

func suffix(variant string) string {
	if variant == "" {
		return ""
	}
	return " (" + variant + ")"
}

// runSim runs the simulator and reduces its rows to the real run's
// figures.
func runSim(ctx context.Context, c sim.Config) (Figures, []SecondRow, error) {
	s, err := sim.New(c)
	if err != nil {
		return Figures{}, nil, err
	}
	start := time.Now()
	if err := s.Run(ctx, nil); err != nil {
		return Figures{}, nil, err
	}
	wall := time.Since(start)
	sm := s.Summary(wall)
	var rows []SecondRow
	for _, r := range s.Rows() {
		rows = append(rows, SecondRow{T: float64(r.T), Nodes: r.Nodes, RPCMean: r.RPCMean,
			RPCMeanNoLookup: (r.TotalRPC - r.LookupRPC) / float64(max(r.Nodes, 1)),
			RPCMax:          r.RPCMax, RPCMaxNoLookup: r.RPCMaxNoLookup, RPCMaxNoIndexNoLookup: r.RPCMaxNoIndexNoLookup,
			RPCMeanModelled: r.RPCMean, RPCMaxModelled: r.RPCMax,
			LookupRPC: r.LookupRPC, TotalRPC: r.TotalRPC, IndexMax: int(r.IndexMax), Moves: r.Moves,
			Submitted: r.Submitted, Claimed: r.Claimed, Finished: r.Finished, Harvested: r.Collected})
	}
	f := Figures{Side: "sim", Span: sm.Simulated, Window: sm.Simulated, Wall: wall, NodesStart: c.Nodes,
		Submitted: sm.Submitted, Claimed: sm.Claimed, Finished: sm.Finished, Harvested: sm.Collected, Lost: sm.Lost, LostNoReplica: sm.Lost, DoubleClaims: sm.Doubles,
		LogDoubles: -1, Reactions: -1, Moves: sm.Moves, FailedAttempts: sm.Failed, FailedBy: sm.FailedBy, RPCsPerJob: map[string]float64{}}
	if len(rows) > 0 {
		f.NodesEnd = rows[len(rows)-1].Nodes
	}
	reduceRows(&f, rows, sm.Simulated)
	f.SubmittedInWindow, f.ClaimedInWindow, f.FinishedInWindow, f.HarvestedInWindow = sm.Submitted, sm.Claimed, sm.Finished, sm.Collected
	var all uint64
	for _, v := range sm.RPC {
		all += v
	}
	for k, v := range sm.RPC {
		f.RPCsPerJob[k] = float64(v) / float64(max(sm.Submitted, 1))
	}
	if all > 0 {
		f.LookupShare = float64(sm.RPC["lookup"]) / float64(all)
	}
	f.LookupBy = map[string]float64{}
	for k, v := range sm.LookupRPC {
		if v > 0 {
			f.LookupBy[k] = float64(v) / float64(max(sm.Submitted, 1))
		}
	}
	return f, rows, nil
}

// reduceRows fills f's RPC figures from the rows within the window
// (whole seconds up to window).
func reduceRows(f *Figures, rows []SecondRow, window time.Duration) {
	var maxes, maxesNL, maxesMod, ratios []float64
	var sumMean, sumMeanNL, sumMod float64
	n := 0
	lim := window.Seconds() + 0.5
	for _, r := range rows {
		if r.T > lim {
			break
		}
		n++
		sumMean += r.RPCMean
		sumMeanNL += r.RPCMeanNoLookup
		sumMod += r.RPCMeanModelled
		maxesMod = append(maxesMod, r.RPCMaxModelled)
		maxes = append(maxes, r.RPCMax)
		maxesNL = append(maxesNL, r.RPCMaxNoLookup)
		if r.RPCMean > 0 {
			ratios = append(ratios, r.RPCMax/r.RPCMean)
		}
		f.PeakIndexMax = max(f.PeakIndexMax, float64(r.IndexMax))
		f.SubmittedInWindow, f.ClaimedInWindow, f.FinishedInWindow, f.HarvestedInWindow = r.Submitted, r.Claimed, r.Finished, r.Harvested
	}
	if n == 0 {
		return
	}
	f.MeanRPC, f.MeanRPCNoLookup = sumMean/float64(n), sumMeanNL/float64(n)
	f.PeakMax, f.MedianMax = slices.Max(maxes), medianOf(maxes)
	f.PeakMaxNoLookup, f.MedianMaxNoLookup = slices.Max(maxesNL), medianOf(maxesNL)
	f.MedianMaxOverMean = medianOf(ratios)
	f.MeanRPCModelled, f.PeakMaxModelled, f.MedianMaxModelled = sumMod/float64(n), slices.Max(maxesMod), medianOf(maxesMod)
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	return ys[len(ys)/2]
}

// finite turns NaN and infinities into 0 for the report.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
