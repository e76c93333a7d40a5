package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// Execution modes of the bench's clients: both are client.Client
// workers; they differ in the executor that runs the application.
const (
	// ExecInProcess calls the built-in application in this process (no
	// child process, no limits): the client's cycle, without the cost of
	// starting a process per job.
	ExecInProcess = "inproc"
	// ExecSubprocess starts the application through the launcher (`up
	// app exec`) per job, as a volunteer's client does.
	ExecSubprocess = "subprocess"
)

// App is the zero-work application the bench's jobs run: hashchain
// with n = 0 (one SHA-256 of the unit's seed, a distinct, deterministic
// 65-byte output per unit, so copies validate by equality).
const App = "hashchain"

// Options configure Run. Zero values take the defaults.
type Options struct {
	Nodes   int // default 16
	R       int // replication r; default 5
	Clients int // default 4
	Slots   int // parallel jobs per client; default 2
	// ClaimMany is the most jobs of one place a client claims at once
	// (client.Config.ClaimMany); default 0: chosen per claim, as a
	// client's default.
	ClaimMany int
	Jobs      int // default 500; a multiple of Copies
	Keywords  int // keywords per job (the project's name first); default 1
	Copies    int // redundant copies per unit; default 1
	// Rate is the offered load in jobs/s, submitted every 100 ms; 0
	// submits as fast as the pool takes them, keeping at most Window
	// jobs submitted and not yet harvested.
	Rate   float64
	Window int // default 64 × Clients × Slots / 8, at least 4 × Batch
	// HarvestEvery is the least time between the starts of two harvest
	// passes, as a project harvesting on a schedule would (its batches
	// bigger: the project's cost per job at a realistic cadence); 0
	// harvests again at once after a pass that recorded results, 20 ms
	// after one that did not. A cadence needs a window of the jobs
	// finished meanwhile (--window).
	HarvestEvery time.Duration
	Batch        int // jobs per submission call in the closed loop; default 32
	// Exec is ExecInProcess (default) or ExecSubprocess.
	Exec        string
	Launcher    []string // ExecSubprocess: how to run `up app exec`
	LauncherEnv []string
	// ProjectShare samples the process's CPU with a pprof CPU profile
	// whose samples are labelled by party (the project's and the clients'
	// goroutines carry labels), to split the CPU between them. It is
	// skipped, with a note, when a CPU profile is already running.
	ProjectShare bool
	// CPUProfile, when set, receives the pprof CPU profile of the steady
	// phase (first submission to last harvest, setup excluded), its
	// samples labelled party=project or party=client.
	CPUProfile io.Writer
	// HeapProfile, when set, receives the pprof heap profile taken right
	// after the last harvest (after a garbage collection): what the run
	// retains.
	HeapProfile io.Writer
	// HeapProfileEvery, when set with HeapProfileAt, has the run take a
	// heap profile (after a garbage collection) each time another
	// HeapProfileEvery jobs are harvested, written to what HeapProfileAt
	// returns for the jobs harvested so far: profiles to diff
	// (pprof -base) to attribute growth within one run.
	HeapProfileEvery int
	HeapProfileAt    func(harvested int64) (io.WriteCloser, error)
	// TCollect, when set, is the nodes' T_collect (collected jobs are
	// deleted this long after collection; production 2 h) and scales the
	// republish period (25 ± 5 min in production), replica expiry (1 h)
	// and the index's backup listers' delay (10 min) with it; the bench runs one republish round after the run and waits,
	// up to TCollect + 30 s, for every node store and index to be empty of
	// the run's jobs, reporting what is left.
	TCollect time.Duration
	Dir      string // required
	Seed     uint64
	Timeout  time.Duration // default 5 min
	Log      io.Writer     // progress lines; nil: none
	// BackupDelay, when set, is the index's backup listers' delay
	// (indexwriter.Config.BackupDelay; else scaled with TCollect, or
	// the 10 min default).
	BackupDelay time.Duration
	// Adversary makes some nodes Byzantine and some clocks wrong.
	Adversary testnet.Adversary
	// Inspect, when set, is called after the last harvest, or at the
	// timeout, with the network and the ledger still open (a test's
	// checks).
	Inspect func(*testnet.Network, *project.Ledger)
	// GiveUp, when set, is asked every 10 s once every job is submitted;
	// true ends the run as the timeout would (a test that expects some
	// jobs never to finish, such as those with more than f faulty
	// replicas, need not wait the timeout out).
	GiveUp func(*testnet.Network, *project.Ledger) bool
	// AfterEmpty, when set with TCollect, is called after the wait for
	// the node stores to empty, with the network still open.
	AfterEmpty func(*testnet.Network)
}

func (o *Options) defaults() {
	if o.Nodes == 0 {
		o.Nodes = 16
	}
	if o.R == 0 {
		o.R = 5
	}
	if o.Clients == 0 {
		o.Clients = 4
	}
	if o.Slots == 0 {
		o.Slots = 2
	}
	if o.Jobs == 0 {
		o.Jobs = 500
	}
	if o.Keywords == 0 {
		o.Keywords = 1
	}
	if o.Copies == 0 {
		o.Copies = 1
	}
	if o.Batch == 0 {
		o.Batch = 32
	}
	if o.Window == 0 {
		o.Window = max(8*o.Clients*o.Slots, 4*o.Batch)
	}
	if o.Exec == "" {
		o.Exec = ExecInProcess
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
}

// Validate reports the first bad option, in one line.
func (o Options) Validate() error {
	o.defaults()
	switch {
	case o.Dir == "":
		return errors.New("bench: no directory")
	case o.TCollect < 0:
		return fmt.Errorf("bench: T_collect %s is negative", o.TCollect)
	case o.R < 1 || o.R > 20:
		return fmt.Errorf("r %d out of 1..20", o.R)
	case o.Nodes < o.R || o.Nodes > 256:
		return fmt.Errorf("nodes %d out of r..256 (r = %d)", o.Nodes, o.R)
	case o.Clients < 1 || o.Clients > 256:
		return fmt.Errorf("clients %d out of 1..256", o.Clients)
	case o.Slots < 1 || o.Slots > 64:
		return fmt.Errorf("slots %d out of 1..64", o.Slots)
	case o.ClaimMany < 0 || o.ClaimMany > wire.MaxClaimMany:
		return fmt.Errorf("claim-many %d out of 0..%d", o.ClaimMany, wire.MaxClaimMany)
	case o.Copies < 1 || o.Copies > 8:
		return fmt.Errorf("copies %d out of 1..8", o.Copies)
	case o.Copies > o.Clients:
		return fmt.Errorf("copies %d needs at least as many clients (got %d): copies must come from different clients", o.Copies, o.Clients)
	case o.Jobs < 1 || o.Jobs > 10_000_000:
		return fmt.Errorf("jobs %d out of 1..10000000", o.Jobs)
	case o.Jobs%o.Copies != 0:
		return fmt.Errorf("jobs %d is not a multiple of copies %d", o.Jobs, o.Copies)
	case o.Keywords < 1 || o.Keywords > job.MaxKeywords:
		return fmt.Errorf("keywords %d out of 1..%d", o.Keywords, job.MaxKeywords)
	case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate > 1e6:
		return fmt.Errorf("rate %v out of 0..1000000 jobs/s", o.Rate)
	case o.Batch < 1 || o.Batch > wire.MaxJobsPerStore:
		return fmt.Errorf("batch %d out of 1..%d", o.Batch, wire.MaxJobsPerStore)
	case o.Window < o.Copies:
		return fmt.Errorf("window %d below copies %d", o.Window, o.Copies)
	case o.Exec != ExecInProcess && o.Exec != ExecSubprocess:
		return fmt.Errorf("exec %q: want %s or %s", o.Exec, ExecInProcess, ExecSubprocess)
	case o.Exec == ExecSubprocess && len(o.Launcher) == 0:
		return errors.New("exec subprocess needs a launcher")
	case o.Timeout < 0:
		return fmt.Errorf("timeout %v is negative", o.Timeout)
	case o.HarvestEvery < 0 || o.HarvestEvery > time.Minute:
		return fmt.Errorf("harvest-every %v out of 0..1m", o.HarvestEvery)
	}
	return nil
}

// Report is what Run measured. Per-job figures divide by Jobs;
// everything is measured from the first submission to the last harvest
// (setup excluded).
type Report struct {
	Nodes       int     `json:"nodes"`
	R           int     `json:"r"`
	Clients     int     `json:"clients"`
	Slots       int     `json:"slots"`
	ClaimMany   int     `json:"claim_many"`
	Jobs        int     `json:"jobs"`
	Units       int     `json:"units"`
	Copies      int     `json:"copies"`
	Keywords    int     `json:"keywords"`
	Exec        string  `json:"exec"`
	OfferedRate float64 `json:"offered_rate"` // jobs/s; 0: as fast as possible
	// HarvestEveryS is the least time between two harvest passes' starts,
	// s (Options.HarvestEvery); 0: back to back.
	HarvestEveryS float64 `json:"harvest_every_s"`

	ElapsedS   float64 `json:"elapsed_s"`
	JobsPerSec float64 `json:"jobs_per_s"`

	CPUUSPerJob float64 `json:"cpu_us_per_job"` // whole process, user+sys (getrusage)
	GCPercent   int     `json:"gc_percent"`     // the process's GC target (GOGC; up sets 400 unless GOGC is set)
	// Parties split the profiled CPU by pprof label: project (its
	// submitter and harvester goroutines and what they start, including
	// its connections' read/write loops), clients, and the rest (nodes,
	// GC workers, runtime). Empty when not sampled.
	PartyCPUUSPerJob map[string]float64 `json:"party_cpu_us_per_job,omitempty"`
	ProfiledCPUS     float64            `json:"profiled_cpu_s,omitempty"` // total CPU in the profile (cross-check against getrusage)
	ShareNote        string             `json:"share_note,omitempty"`
	// WorkCPUUSPerJob splits the profiled CPU by kind of work (signatures,
	// result sealing, socket syscalls, channel encryption, store, ...: see
	// workKinds), for the whole process and for the project alone.
	WorkCPUUSPerJob        map[string]float64 `json:"work_cpu_us_per_job,omitempty"`
	ProjectWorkCPUUSPerJob map[string]float64 `json:"project_work_cpu_us_per_job,omitempty"`

	SubmitWallS  float64 `json:"submit_wall_s"`  // time spent in the project's SubmitUnits calls
	HarvestWallS float64 `json:"harvest_wall_s"` // time spent in its Harvest calls
	Harvests     int     `json:"harvests"`       // Harvest passes
	// RefusedCopies counts the result copies single nodes served that
	// failed to open or verify (a node altered them); another node's copy
	// was then taken.
	RefusedCopies int `json:"refused_copies"`

	// RPCs served by all nodes per job, by protocol (kad-dht requests as
	// "dht:<type>"), and by the requester's role.
	RPCsPerJob       float64            `json:"rpcs_per_job"`
	RPCsByProtocol   map[string]float64 `json:"rpcs_per_job_by_protocol"`
	RPCsByRole       map[string]float64 `json:"rpcs_per_job_by_role"`
	MinRPCsPerJob    int                `json:"min_rpcs_per_job"` // 4r + keywords + 4: each job placed alone (a batch's share its store, index writes and collect)
	LookupsPerJob    map[string]float64 `json:"lookups_per_job"`  // network lookups by party; "cached" all parties' cache hits
	LookupRPCsPerJob float64            `json:"lookup_rpcs_per_job"`

	SubmitToHarvest Quantiles `json:"submit_to_harvest"` // ms resolution (ledger timestamps)
	Claim           Quantiles `json:"claim"`             // one claim won (its ClaimAt)

	BytesPerJob   float64 `json:"bytes_per_job"`    // sent by nodes plus received by nodes from agents
	PeakRSSMiB    float64 `json:"peak_rss_mib"`     // whole process
	RSSPerNodeMiB float64 `json:"rss_per_node_mib"` // peak RSS / nodes (an upper bound)
	HeapMiB       float64 `json:"heap_mib"`         // heap in use at the end
	// Live heap (reachable at the last GC), sampled every 2 s: first past
	// the warm-up (a fifth of the jobs harvested and T_collect elapsed),
	// at the last sample and at most; 0 when the run was too short.
	LiveHeapWarmMiB float64 `json:"live_heap_warm_mib,omitempty"`
	LiveHeapEndMiB  float64 `json:"live_heap_end_mib,omitempty"`
	LiveHeapMaxMiB  float64 `json:"live_heap_max_mib,omitempty"`
	// HeapCurve is every 2 s sample of the live heap, from the first
	// submission on: the curve behind the three figures above.
	HeapCurve []HeapSample `json:"heap_curve,omitempty"`

	// Consistency.
	Submitted     int `json:"submitted"`        // acknowledged by r replicas
	Recorded      int `json:"recorded"`         // results recorded, summed over harvests
	Collected     int `json:"collected"`        // collect confirmations, summed over harvests
	LedgerResults int `json:"ledger_results"`   // rows in the ledger's results
	LedgerCollect int `json:"ledger_collected"` // jobs in state collected
	Runs          int `json:"runs"`             // results the clients submitted
	ClaimsWon     int `json:"claims_won"`
	ClaimsLost    int `json:"claims_lost"`
	ClaimsFailed  int `json:"claims_failed"`
	EmptyFinds    int `json:"empty_finds"` // queries that found nothing
	Released      int `json:"released"`    // claims given back unrun or unfinished (client.Status.Released)
	HeldAtEnd     int `json:"held_at_end"` // jobs still in node stores (collected jobs wait T_collect)
	// With TCollect set: what the node stores and indexes still held after
	// T_collect (both 0 when the run left nothing behind), and how long
	// after the last harvest they were empty (s; -1: never).
	LeftJobs, LeftEntries int      `json:",omitempty"`
	EmptyAfterS           float64  `json:",omitempty"`
	UnitsValid            int      `json:"units_valid"`
	Errors                []string `json:"errors,omitempty"`
}

// Consistent reports the first way the report does not add up.
func (r Report) Consistent() error {
	switch {
	case r.Submitted != r.Jobs:
		return fmt.Errorf("%d of %d jobs submitted", r.Submitted, r.Jobs)
	case r.Recorded != r.Jobs:
		return fmt.Errorf("%d results recorded by the harvests for %d jobs", r.Recorded, r.Jobs)
	case r.LedgerResults != r.Jobs:
		return fmt.Errorf("%d results in the ledger for %d jobs", r.LedgerResults, r.Jobs)
	case r.LedgerCollect != r.Jobs:
		return fmt.Errorf("%d of %d jobs collected in the ledger", r.LedgerCollect, r.Jobs)
	case r.Collected < r.Jobs:
		return fmt.Errorf("%d collect confirmations for %d jobs", r.Collected, r.Jobs)
	case r.Runs != r.Jobs:
		return fmt.Errorf("clients ran %d results for %d jobs", r.Runs, r.Jobs)
	case r.UnitsValid != r.Units:
		return fmt.Errorf("%d of %d units validated", r.UnitsValid, r.Units)
	case r.SubmitToHarvest.N != r.Jobs:
		return fmt.Errorf("%d submit-to-harvest times for %d jobs", r.SubmitToHarvest.N, r.Jobs)
	}
	return nil
}

// benchProject is the bench's project name (its first keyword).
const benchProject = "bench"

// Format writes the report as text.
func (r Report) Format(w io.Writer) {
	load := "as fast as possible"
	if r.OfferedRate > 0 {
		load = fmt.Sprintf("%.0f jobs/s offered", r.OfferedRate)
	}
	many := ", claim groups chosen per claim"
	if r.ClaimMany == 1 {
		many = ""
	} else if r.ClaimMany > 1 {
		many = fmt.Sprintf(", claiming up to %d jobs of a place at once", r.ClaimMany)
	}
	fmt.Fprintf(w, "lifecycle bench: %d nodes, r = %d, %d clients × %d slots (%s%s), %d jobs = %d units × %d copies, %d keyword(s), %s\n",
		r.Nodes, r.R, r.Clients, r.Slots, r.Exec, many, r.Jobs, r.Units, r.Copies, r.Keywords, load)
	fmt.Fprintf(w, "  throughput        %8.1f jobs/s sustained (%d jobs in %.2f s, first submit to last harvest)\n", r.JobsPerSec, r.Jobs, r.ElapsedS)
	fmt.Fprintf(w, "  CPU               %8.0f µs/job, whole process (getrusage user+sys), GC target %d %%\n", r.CPUUSPerJob, r.GCPercent)
	if len(r.PartyCPUUSPerJob) > 0 {
		keys := sortedKeys(r.PartyCPUUSPerJob)
		for _, k := range keys {
			fmt.Fprintf(w, "    %-15s %8.0f µs/job\n", k, r.PartyCPUUSPerJob[k])
		}
		fmt.Fprintf(w, "    (%s; %.2f s profiled)\n", r.ShareNote, r.ProfiledCPUS)
		printWork(w, "CPU by work", r.WorkCPUUSPerJob)
		printWork(w, "project by work", r.ProjectWorkCPUUSPerJob)
	} else if r.ShareNote != "" {
		fmt.Fprintf(w, "    project share %s\n", r.ShareNote)
	}
	fmt.Fprintf(w, "  project wall      submit %.2f s, harvest %.2f s in %d passes\n", r.SubmitWallS, r.HarvestWallS, r.Harvests)
	fmt.Fprintf(w, "  RPCs              %8.1f /job served by nodes; minimum of a job placed alone 4r + keywords + 4 = %d (%.2f×)\n",
		r.RPCsPerJob, r.MinRPCsPerJob, r.RPCsPerJob/float64(r.MinRPCsPerJob))
	for _, k := range sortedKeys(r.RPCsByProtocol) {
		fmt.Fprintf(w, "    %-28s %7.2f\n", strings.TrimPrefix(k, "/up/"), r.RPCsByProtocol[k])
	}
	fmt.Fprintf(w, "    by requester:")
	for _, k := range sortedKeys(r.RPCsByRole) {
		fmt.Fprintf(w, " %s %.2f", k, r.RPCsByRole[k])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  DHT lookups       ")
	for _, k := range sortedKeys(r.LookupsPerJob) {
		fmt.Fprintf(w, " %s %.3f", k, r.LookupsPerJob[k])
	}
	fmt.Fprintf(w, " per job; %.2f FIND_NODE RPCs/job\n", r.LookupRPCsPerJob)
	fmt.Fprintf(w, "  submit→harvest    p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d jobs)\n", r.SubmitToHarvest.P50, r.SubmitToHarvest.P99, r.SubmitToHarvest.Max, r.SubmitToHarvest.N)
	fmt.Fprintf(w, "  one claim         p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d claims)\n", r.Claim.P50, r.Claim.P99, r.Claim.Max, r.Claim.N)
	fmt.Fprintf(w, "  wire              %8.0f bytes/job\n", r.BytesPerJob)
	fmt.Fprintf(w, "  memory            peak RSS %.0f MiB for the process (%.1f MiB per node at most), heap %.0f MiB at the end\n", r.PeakRSSMiB, r.RSSPerNodeMiB, r.HeapMiB)
	if r.LiveHeapWarmMiB > 0 {
		fmt.Fprintf(w, "  growth            live heap %.0f MiB after warm-up, %.0f MiB at the end (%+.0f %%), %.0f MiB at most\n", r.LiveHeapWarmMiB, r.LiveHeapEndMiB, 100*(r.LiveHeapEndMiB/r.LiveHeapWarmMiB-1), r.LiveHeapMaxMiB)
	}
	fmt.Fprintf(w, "  checks            submitted %d, recorded %d, collected %d (ledger: %d results, %d collected, %d/%d units valid), runs %d, claims won %d lost %d failed %d, released %d, empty finds %d, held at end %d\n",
		r.Submitted, r.Recorded, r.Collected, r.LedgerResults, r.LedgerCollect, r.UnitsValid, r.Units, r.Runs, r.ClaimsWon, r.ClaimsLost, r.ClaimsFailed, r.Released, r.EmptyFinds, r.HeldAtEnd)
	if r.EmptyAfterS > 0 {
		fmt.Fprintf(w, "  after T_collect   node stores and indexes empty %.1f s after the last harvest (one republish round run)\n", r.EmptyAfterS)
	} else if r.EmptyAfterS < 0 {
		fmt.Fprintf(w, "  after T_collect   LEFT BEHIND: %d jobs in node stores, %d index entries\n", r.LeftJobs, r.LeftEntries)
	}
	if err := r.Consistent(); err != nil {
		fmt.Fprintf(w, "  INCONSISTENT: %v\n", err)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  error: %s\n", e)
	}
}
