package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht/keyspace"
	replicarule "github.com/up-pool/up/replica"
)

// Workload is the shape of a scenario's job stream.
type Workload string

// Workloads (thesis 4.4 and 4.5).
const (
	// Static: Jobs jobs submitted at Rate jobs/s, an idle gap, claimed at
	// Rate, an idle period while they "run", results submitted at Rate,
	// harvested and collected (thesis 4.4, Figure 4.1).
	Static Workload = "static"
	// Dynamic: jobs submitted at Rate jobs/s for Duration, claimed at the
	// same rate after a short lead, each running JobLength (thesis 4.4,
	// Figure 4.2).
	Dynamic Workload = "dynamic"
	// Trace: an LHC@home-like trace synthesised from the distributions of
	// thesis 1.2: batches, 92 % short and 8 % long jobs, 11.3 % time-outs,
	// 5.6 % client errors, a closed population of clients (thesis 4.5).
	Trace Workload = "trace"
)

// Partition splits the overlay in two for a while (thesis 3.7).
type Partition struct {
	At       time.Duration // when the partition starts (0: no partition)
	Length   time.Duration // how long it lasts
	Fraction float64       // share of nodes cut off in the minority side, 0..0.5
}

// Config is one simulation run. Every duration is virtual time. Zero
// fields take the defaults noted (thesis 4.3 parameters, docs/design.md).
type Config struct {
	Name     string   // run name, used in file names (default: scenario-nodes-balance)
	Workload Workload // static, dynamic or trace
	Nodes    int      // overlay nodes at the start; default 1024
	Seed     uint64   // seed of every random choice; default 1

	// Workload.
	Jobs       int           // static: jobs in total; default 50,000
	Rate       float64       // jobs/s submitted (and claimed); default 15 static, 10 dynamic
	Duration   time.Duration // dynamic: submission time; trace: trace length; default 5 h dynamic, 37 days trace
	JobLength  time.Duration // dynamic: compute time of a job; default 1 h
	Gap        time.Duration // static: idle time between submission end and claiming; default 1 h
	RunIdle    time.Duration // static: idle time between claims end and results; default 12 h
	Lead       time.Duration // dynamic: claims start this long after the first submission; default 2 min
	Clients    int           // trace: client population (closed loop); default 10 × Nodes
	ClientPoll time.Duration // trace: an idle client's time between index queries; default 10 min
	Keyword    string        // the single index keyword (thesis 4.3: "LHC"); default LHC

	// Protocol parameters (thesis 4.3).
	R             int           // replicas per job; default 5
	TClaim        time.Duration // temporary claim life; default 15 s
	TCert         time.Duration // an accepted claim's wait for its certificate before the watch voids it (claimnet); default 1 min
	CertifyDelay  time.Duration // a won claim's certificate waits this long for the result, which carries it instead (claimclient.DefaultCertifyDelay); default 1 s; negative: sent at once
	TFinish       time.Duration // claim life (job deadline); default 48 h static, 4×JobLength dynamic
	TCollect      time.Duration // collected jobs kept; default 2 h
	Quarantine    time.Duration // served index entry held back; default 2 min
	IndexExpiry   time.Duration // index entry life unless rewritten; default 16 min
	RewriteMin    time.Duration // T_rewrite lower bound; default 10 min
	RewriteMax    time.Duration // T_rewrite upper bound; default 15 min
	WriterTick    time.Duration // a writer batches its index writes per tick; default 10 s
	ReplicaExpiry time.Duration // replica kept after leaving the r closest; default 1 h
	RepublishMin  time.Duration // republish interval lower bound; default 20 min
	RepublishMax  time.Duration // republish interval upper bound; default 30 min
	// RepublishFullEvery: every this many rounds a node syncs every job
	// it holds; the others skip collected jobs it synced to the same
	// view (pool.Config.RepublishFullEvery); default 4, 1 syncs every job
	// every round.
	RepublishFullEvery int
	RegionBits         int           // p, bits of a keyword's wildcard region; default keyspace.DefaultIndexBits (4)
	FindTries          int           // random region points a client queries before giving up; default 3
	HarvestEvery       time.Duration // project harvest interval; default 30 s
	HarvestMax         int           // H, most results collected per harvest round; default 1000

	// Load balancing (thesis 3.4, 4.2.1).
	Balance     bool          // load balancing on
	NoPiggyback bool          // balancing reacts only to its periodic probes, not to loads piggy-backed on replies (loadbalance.Observed)
	BalanceMin  time.Duration // LB period lower bound; default 20 min
	BalanceMax  time.Duration // LB period upper bound; default 60 min
	Phi         float64       // φ; default 0.4
	WIndex      float64       // w_index; default 1
	WJob        float64       // w_job; default 3
	WRate       float64       // weight of one request per second; default 10 (loadbalance.DefaultWRate)
	Trivial     float64       // ΔL_trivial; default 100
	CoolDown    time.Duration // no LB after a move or data change; default 21 min (index expiry + 5 min)
	SplitSlack  float64       // loadbalance.SplitFrom slack; default 0.1

	// Overlay and network model.
	Alpha         int           // lookup parallelism α; default 3
	K             int           // bucket size k; default 20
	LookupCache   time.Duration // a lookup's answer is reused this long; default 90 s
	RegionTTL     time.Duration // a party's region view (indexclient.Regions) is kept this long; default 5 min
	CrawlInterval time.Duration // the project re-crawls the overlay when its crawled view is older than this; default 10 min; negative: never (first nodes from its routing table alone)
	LatencyMedian time.Duration // one-way latency median (lognormal); default 80 ms
	LatencySigma  float64       // lognormal σ of the one-way latency; default 0.6
	Drop          float64       // probability an RPC is lost; default 0
	RPCTimeout    time.Duration // a sender gives up on a lost RPC after this; default 5 s
	// ProbeFresh is dht.Config.ProbeFresh: a republish round pings a peer
	// it relies on unless it heard from it (a reply, a request) within
	// this long in both parties' present runs; default 30 s, unscaled as
	// on the real nodes. Negative: every round pings every such peer
	// (dht.Config.AlwaysProbe).
	ProbeFresh time.Duration
	ChurnLife  time.Duration // mean node lifetime (exponential); 0: no churn
	ChurnDown  time.Duration // mean down time; default ChurnLife
	// ChurnRestart makes a node that comes back the same node restarted,
	// as the real nodes' Network.Restart does: same identity and
	// position, its jobs and claim log kept (its index entries, caches
	// and views are not). Off: it comes back as a new node with no data.
	ChurnRestart bool
	// NoRepair turns off the repair on departure (replica.RepairTo,
	// repair.go): a crashed node's place among a job's r closest is
	// then filled only by the next republish round. For controls and
	// comparisons; the nodes always repair.
	NoRepair  bool
	Partition Partition // an optional partition

	// Fault model (issue 17; fault.go). Node slots are drawn from their
	// own seeded stream.
	Byzantine  float64       // share of nodes that are Byzantine, 0..1
	Behaviours []Behaviour   // their behaviours, assigned round-robin; default AllBehaviours
	Skewed     float64       // share of nodes whose clock is off by an offset uniform in ±Skew
	Skew       time.Duration // default 10 min
	Jump       float64       // share of nodes whose clock jumps +1 h once, at a uniform time in the run
	// ClaimQuorum is the grants a replica needs to accept a confirm;
	// default claim.Quorum(R), the production rule (a test sets R to
	// show what the quorum buys).
	ClaimQuorum int
	// FirstNodes is how many first nodes the project sends a job through
	// before it gives the submission up (submit.go); default
	// replica.MaxFirstNodes, the production bound (a test sets 1 to show
	// what going on to the next buys).
	FirstNodes int

	// Message sizes in bytes, for the bandwidth figures.
	SizeLookup int // one lookup RPC with its answer of k peers; default 600
	SizeJob    int // a signed job spec with its listing; default 1500
	SizeState  int // one job state in a sync, collected notice or claim reply; default 120
	SizeEntry  int // one index entry written or served; default 300
	SizeResult int // a sealed result; default 2048
	SizeHeader int // per-RPC overhead; default 64
	SizePing   int // a liveness ping (/up/ping) and its answer; default 16

	// Output.
	Interval time.Duration // CSV row interval (maxima and means over it); default 1 s (1 min for trace)
	Limit    time.Duration // stop the run at this virtual time (0: when the workload is done)
}

// Presets are the named scenarios of issue 9. Each returns a Config for
// the given node count; flags override fields afterwards.
var Presets = map[string]func(nodes int) Config{
	"static": func(n int) Config { return Config{Workload: Static, Nodes: n} },
	"dynamic": func(n int) Config {
		return Config{Workload: Dynamic, Nodes: n}
	},
	"churn": func(n int) Config {
		return Config{Workload: Static, Nodes: n, ChurnLife: 24 * time.Hour}
	},
	"churn-dynamic": func(n int) Config {
		return Config{Workload: Dynamic, Nodes: n, ChurnLife: 24 * time.Hour}
	},
	"loadbalance": func(n int) Config {
		return Config{Workload: Static, Nodes: n, Balance: true}
	},
	"loadbalance-dynamic": func(n int) Config {
		return Config{Workload: Dynamic, Nodes: n, Balance: true}
	},
	"trace": func(n int) Config {
		return Config{Workload: Trace, Nodes: n, Balance: true, ChurnLife: 24 * time.Hour}
	},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var out []string
	for k := range Presets {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Preset returns the named scenario for nodes nodes.
func Preset(name string, nodes int) (Config, error) {
	f, ok := Presets[name]
	if !ok {
		return Config{}, fmt.Errorf("%w: unknown scenario %q (want one of %s)", ErrConfig, name, strings.Join(PresetNames(), ", "))
	}
	c := f(nodes)
	c.Name = name
	return c, nil
}

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("sim config")

func defDur(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func defInt(d *int, v int) {
	if *d == 0 {
		*d = v
	}
}

func defF(d *float64, v float64) {
	if *d == 0 {
		*d = v
	}
}

// ApplyDefaults fills zero fields.
func (c *Config) ApplyDefaults() {
	c.defaultWorkload()
	c.defaultProtocol()
	c.defaultBalance()
	c.defaultNetwork()
	c.defaultFaults()
	c.defaultSizes()
	c.defaultOutput()
}

// defaultWorkload fills the run's identity (workload, nodes, seed) and
// the workload's shape: job count, rate and times, per workload.
func (c *Config) defaultWorkload() {
	if c.Workload == "" {
		c.Workload = Static
	}
	defInt(&c.Nodes, 1024)
	if c.Seed == 0 {
		c.Seed = 1
	}
	switch c.Workload {
	case Static:
		defInt(&c.Jobs, 50_000)
		defF(&c.Rate, 15)
		defDur(&c.TFinish, 48*time.Hour)
	case Dynamic:
		defF(&c.Rate, 10)
		defDur(&c.Duration, 5*time.Hour)
	case Trace:
		defF(&c.Rate, 10)
		defDur(&c.Duration, 37*24*time.Hour)
		defInt(&c.Clients, 10*c.Nodes)
		defDur(&c.Interval, time.Minute)
	}
	defDur(&c.JobLength, time.Hour)
	defDur(&c.TFinish, 4*c.JobLength)
	defDur(&c.Gap, time.Hour)
	defDur(&c.RunIdle, 12*time.Hour)
	defDur(&c.Lead, 2*time.Minute)
	defDur(&c.ClientPoll, 10*time.Minute)
	if c.Keyword == "" {
		c.Keyword = "LHC"
	}
}

// defaultProtocol fills the protocol parameters of thesis 4.3: replicas,
// claim and index lifetimes, rewrite and republish intervals, the index
// region and the harvest.
func (c *Config) defaultProtocol() {
	defInt(&c.R, 5)
	defDur(&c.TClaim, 15*time.Second)
	defDur(&c.TCert, time.Minute)
	defDur(&c.CertifyDelay, time.Second)
	defDur(&c.TCollect, 2*time.Hour)
	defDur(&c.Quarantine, 2*time.Minute)
	defDur(&c.IndexExpiry, 16*time.Minute)
	defDur(&c.RewriteMin, 10*time.Minute)
	defDur(&c.RewriteMax, 15*time.Minute)
	defDur(&c.WriterTick, 10*time.Second)
	defDur(&c.ReplicaExpiry, time.Hour)
	defDur(&c.RepublishMin, 20*time.Minute)
	defDur(&c.RepublishMax, 30*time.Minute)
	defInt(&c.RepublishFullEvery, 4)
	defInt(&c.RegionBits, keyspace.DefaultIndexBits)
	defInt(&c.FindTries, 3)
	defDur(&c.HarvestEvery, 30*time.Second)
	defInt(&c.HarvestMax, 1000)
}

// defaultBalance fills the load balancing's period, weights and
// cool-down (the cool-down from the index expiry, so after
// defaultProtocol).
func (c *Config) defaultBalance() {
	defDur(&c.BalanceMin, 20*time.Minute)
	defDur(&c.BalanceMax, 60*time.Minute)
	defF(&c.Phi, 0.4)
	defF(&c.WIndex, 1)
	defF(&c.WJob, 3)
	defF(&c.WRate, 10)
	defF(&c.Trivial, 100)
	defDur(&c.CoolDown, c.IndexExpiry+5*time.Minute)
	defF(&c.SplitSlack, 0.1)
}

// defaultNetwork fills the overlay and network model: lookups, caches,
// crawls, latency, time-outs and the churn's down time.
func (c *Config) defaultNetwork() {
	defInt(&c.Alpha, 3)
	defInt(&c.K, 20)
	defDur(&c.LookupCache, 90*time.Second)
	defDur(&c.RegionTTL, 5*time.Minute)
	defDur(&c.CrawlInterval, 10*time.Minute)
	defDur(&c.LatencyMedian, 80*time.Millisecond)
	defF(&c.LatencySigma, 0.6)
	defDur(&c.RPCTimeout, 5*time.Second)
	defDur(&c.ProbeFresh, 30*time.Second)
	defDur(&c.ChurnDown, c.ChurnLife)
}

// defaultFaults fills the fault model: the Byzantine behaviours, the
// clock skew and the claim quorum (from R, so after defaultProtocol).
func (c *Config) defaultFaults() {
	if len(c.Behaviours) == 0 {
		c.Behaviours = AllBehaviours()
	}
	defDur(&c.Skew, 10*time.Minute)
	defInt(&c.ClaimQuorum, claim.Quorum(c.R))
	defInt(&c.FirstNodes, replicarule.MaxFirstNodes)
}

// defaultSizes fills the message sizes of the bandwidth figures.
func (c *Config) defaultSizes() {
	defInt(&c.SizeLookup, 600)
	defInt(&c.SizeJob, 1500)
	defInt(&c.SizeState, 120)
	defInt(&c.SizeEntry, 300)
	defInt(&c.SizeResult, 2048)
	defInt(&c.SizeHeader, 64)
	defInt(&c.SizePing, 16)
}

// defaultOutput fills the row interval, a static run's time limit (from
// the workload, so last) and the run's name.
func (c *Config) defaultOutput() {
	defDur(&c.Interval, time.Second)
	if c.Limit == 0 && c.Workload == Static {
		// A static run ends when every job is collected or lost; should
		// some never be, stop 12 h after the results phase would end.
		phase := time.Duration(float64(c.Jobs) / c.Rate * float64(time.Second))
		c.Limit = 3*phase + c.Gap + c.RunIdle + 12*time.Hour
	}
	if c.Name == "" {
		c.Name = string(c.Workload)
	}
}

// Validate reports a setting the simulator cannot run.
func (c *Config) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrConfig}, a...)...) }
	switch {
	case c.Workload != Static && c.Workload != Dynamic && c.Workload != Trace:
		return bad("workload %q", c.Workload)
	case c.Nodes < 2 || c.Nodes > 1_000_000:
		return bad("nodes %d out of 2..1000000", c.Nodes)
	case c.R < 1 || c.R > 8 || c.R > c.Nodes:
		return bad("r %d out of 1..min(8, nodes)", c.R)
	case c.Rate <= 0 || c.Rate > 10_000:
		return bad("rate %v jobs/s out of (0, 10000]", c.Rate)
	case c.Workload == Static && (c.Jobs < 1 || c.Jobs > 10_000_000):
		return bad("jobs %d out of 1..10000000", c.Jobs)
	case c.Workload != Static && c.Duration <= 0:
		return bad("duration %v must be positive", c.Duration)
	case c.RewriteMax < c.RewriteMin || c.RepublishMax < c.RepublishMin || c.BalanceMax < c.BalanceMin:
		return bad("an interval's upper bound is below its lower bound")
	case c.RegionBits < 0 || c.RegionBits > 64:
		return bad("region bits %d out of 0..64", c.RegionBits)
	case c.Drop < 0 || c.Drop >= 1:
		return bad("drop probability %v out of [0, 1)", c.Drop)
	case c.Partition.Fraction < 0 || c.Partition.Fraction > 0.5:
		return bad("partition fraction %v out of [0, 0.5]", c.Partition.Fraction)
	case c.Interval < time.Second || c.Interval%time.Second != 0:
		return bad("interval %v: want whole seconds", c.Interval)
	case c.K < 1 || c.Alpha < 1:
		return bad("k and α must be positive")
	case c.Workload == Trace && c.Clients < 1:
		return bad("trace needs clients")
	case !(c.Byzantine >= 0 && c.Byzantine <= 1) || !(c.Skewed >= 0 && c.Skewed <= 1) || !(c.Jump >= 0 && c.Jump <= 1):
		return bad("byzantine %v, skewed %v, jump %v: shares out of [0, 1]", c.Byzantine, c.Skewed, c.Jump)
	case c.Skew < 0 || c.Skew > 24*time.Hour:
		return bad("skew %v out of [0, 24h]", c.Skew)
	case c.FirstNodes < 1:
		return bad("first nodes %d: want at least 1", c.FirstNodes)
	}
	for _, b := range c.Behaviours {
		if b == Honest || b >= numBehaviours {
			return bad("behaviour %v is not a fault", b)
		}
	}
	lb := c.controller(0)
	lb.ApplyDefaults()
	if err := lb.Validate(); err != nil {
		return bad("%v", err)
	}
	return nil
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
