package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/client/feasible"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/wire"
)

// Project is one attached project.
type Project struct {
	// Name is the project's name (its certificate's).
	Name string
	// Share is the volunteer's resource share for it (relative weight).
	Share float64
	// Query overrides the index query; default QueryFor(Name, Attributes).
	Query string
}

// Config configures a worker client. Zero values take the defaults.
type Config struct {
	// Agent is the client's overlay presence. Required.
	Agent *agent.Agent
	// Projects are the attached projects. Required.
	Projects []Project
	// Runner runs applications; its allow-list decides what may run.
	// Required: a *runner.Runner (a child process per job, under limits),
	// or another Executor (the bench runs built-ins in its own process).
	Runner Executor
	// Slots is how many jobs run in parallel. Default: the number of CPUs.
	Slots int
	// Attributes of the machine. Defaults: the memory the kernel reports
	// and the platform the binary runs on.
	Attributes Attributes
	// MaxCPU caps the CPU time (user plus system, all threads) one job
	// may use; a job over it is killed and reported to its project as an
	// error result. A job's own limit is its wall-clock limit, 90 % of its
	// T_finish: a slot is one CPU, so a job that burns more CPU time than
	// that is taking more than its slot. 0: that limit alone. The runner
	// enforces CPU time in whole seconds, rounded up.
	MaxCPU time.Duration
	// ClaimMany is the most entries of one place (the jobs of a
	// submission batch) a cycle claims at once, in one request and one
	// confirm per node (claimclient.ClaimMany): it runs the first and
	// keeps the others claimed for its next cycles. At most
	// wire.MaxClaimMany (32); 1: one job per claim. Default 0: chosen
	// for each claim (autoGroup): as many as the slots can run, one
	// after another and after the jobs held, within half the job's
	// T_finish at the run time seen here for its application; one job
	// while the application has not run here.
	ClaimMany int
	// ResultLinger is how long the result of a job claimed with others of
	// its place (ClaimMany) waits for theirs, to leave with them in one
	// request per node under one signature; it leaves at once when the
	// last of them is ready or has failed. Default 2 s; negative: every
	// result leaves alone.
	ResultLinger time.Duration
	// FindBatch is how many entries one query asks for: every entry
	// served is quarantined, so asking for more than the client claims
	// holds jobs back from other clients. Default: ClaimMany; with
	// ClaimMany 0, the size of the project's last claim group (1 until
	// it claimed).
	FindBatch int
	// BackoffMin and BackoffMax bound the exponential backoff when a
	// project has no work or the network fails. Defaults 1 s and 5 min.
	BackoffMin, BackoffMax time.Duration
	// InputDir caches fetched inputs. Required when jobs have inputs
	// fetched by URL.
	InputDir string
	// Blobs gets the blobs jobs name: WebAssembly modules and blob inputs.
	// Nil: jobs that name blobs are skipped before their claim
	// (ErrNoBlobs).
	Blobs Blobs
	// HTTP fetches inputs. Default: a client with a 5 min timeout.
	HTTP *http.Client
	// MaxInput bounds one input file, in bytes. Default 1 GiB.
	MaxInput int64
	// ControlFile keeps the controls changed at run time (Pause, Attach,
	// Detach) across restarts: a JSON file, written atomically, that New
	// applies over Projects (a project it names is attached or detached
	// as it says, with its share). "": kept in memory only.
	ControlFile string
	// FeasibleFile keeps what the client learnt of its availability (its
	// on and off periods: Run's start and return) and of each
	// application's run times across restarts: a JSON file, written
	// atomically at each change (package client/feasible). "": kept in
	// memory only.
	FeasibleFile string
	// Feasible are the parameters of the check that skips a job the
	// client cannot finish before its T_finish (margin ×1.2, window 7
	// days, first guess 10 min for an application never run here: see
	// feasible.Config).
	Feasible feasible.Config
	// MaxJobs stops Run after this many jobs ran (0: run until stopped).
	MaxJobs int
	// Pace is how many requests a second (index queries and claim
	// requests) the client sends one node, in bursts of as many. Default
	// 15, under the nodes' default limits (20 a second, bursts of 40).
	// Negative: unpaced, for nodes whose limits are off (the bench's).
	Pace float64
	// OnClaim, when set, is called with how long each claim the client
	// won took (its claim requests and confirms): the bench's claim
	// latency.
	OnClaim func(took time.Duration)
	// TicketHold is how long a quota ticket holds a job at the client's
	// record node (package quota) before it lapses there, should the
	// client never report the job's end: the client asks one before each
	// claim and reports each job's end. Default 1 h; negative: no
	// tickets (the nodes that require them then refuse its claims).
	TicketHold time.Duration
	// CommitPoll is the first pause between counts of a unit's
	// commitments before a commit–reveal job's result is revealed
	// (doubling up to 16 times it). Default 500 ms.
	CommitPoll time.Duration
	// Seed seeds the backoff jitter. Default 1.
	Seed uint64
	// Now reads the clock. Default time.Now.
	Now func() time.Time
	// Logger receives structured logs.
	Logger *slog.Logger
}

// Executor runs a job's application: *runner.Runner is the worker's.
type Executor interface {
	// Allowed reports whether the project's application may run here.
	Allowed(project, app string) bool
	// AllowedWASM reports whether the project's WebAssembly modules may
	// run here (runner.Config.AllowWASM): tasks with Task.WASM set.
	AllowedWASM(project string) bool
	// Run runs the task to its outcome. A job that fails or is killed for
	// a limit is an Outcome, not an error: an error means it could not be
	// run (not allowed, bad task, ctx ended).
	Run(ctx context.Context, t runner.Task) (runner.Outcome, error)
}

func (c *Config) applyDefaults() {
	if c.TicketHold == 0 {
		c.TicketHold = time.Hour
	}
	if c.Slots == 0 {
		c.Slots = runtime.NumCPU()
	}
	if c.FindBatch == 0 {
		c.FindBatch = c.ClaimMany // 0 with ClaimMany 0: the last group's size (findBatch)
	}
	if c.ResultLinger == 0 {
		c.ResultLinger = 2 * time.Second
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = time.Second
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.HTTP == nil {
		c.HTTP = &http.Client{Timeout: 5 * time.Minute}
	}
	if c.MaxInput == 0 {
		c.MaxInput = 1 << 30
	}
	if c.Pace == 0 {
		c.Pace = paceRate
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports a missing or bad setting.
func (c *Config) Validate() error {
	switch {
	case c.Agent == nil:
		return errors.New("client config: no agent")
	case c.Runner == nil:
		return errors.New("client config: no runner")
	case len(c.Projects) == 0:
		return errors.New("client config: no project attached")
	case c.ClaimMany < 0 || c.ClaimMany > wire.MaxClaimMany:
		return fmt.Errorf("client config: ClaimMany %d is not within 0 (chosen per claim) to %d", c.ClaimMany, wire.MaxClaimMany)
	case c.FindBatch < 0:
		return fmt.Errorf("client config: FindBatch %d is negative", c.FindBatch)
	case c.Slots < 1:
		return fmt.Errorf("client config: %d slots", c.Slots)
	case c.BackoffMin <= 0 || c.BackoffMax < c.BackoffMin:
		return errors.New("client config: backoff bounds")
	case c.MaxCPU < 0:
		return fmt.Errorf("client config: MaxCPU %v is negative", c.MaxCPU)
	}
	for _, p := range c.Projects {
		if p.Name == "" || p.Share <= 0 {
			return fmt.Errorf("client config: project %q with share %v", p.Name, p.Share)
		}
	}
	return nil
}
