package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/scenario"
)

// runFlags are the flags of 'up testnet run'.
type runFlags struct {
	scenario  string
	nodes     int
	jobs      int
	rate      float64
	duration  time.Duration
	jobLength time.Duration
	clients   int
	scale     float64
	churn     time.Duration
	seed      uint64
	out       string
	dir       string
	timeout   time.Duration
	adv       testnet.Adversary
	set       map[string]bool // flags given on the command line
}

// runSetFlags are the flags of 'up testnet run' that override the
// scenario's defaults only when given.
var runSetFlags = []string{"jobs", "rate", "duration", "job-length", "clients", "scale", "churn"}

// defaultRunFlags are the defaults of 'up testnet run'.
func defaultRunFlags() runFlags {
	return runFlags{scenario: "dynamic", nodes: 32, seed: 1, timeout: 15 * time.Minute}
}

// options turns the flags into scenario options; bad flags are usage
// errors of one line. Dir stays empty when --dir is: the run makes a
// temporary one. It touches no file.
func (f *runFlags) options() (scenario.Options, error) {
	bad := func(format string, a ...any) (scenario.Options, error) {
		return scenario.Options{}, usageError{fmt.Errorf(format, a...)}
	}
	if !slices.Contains(scenario.Names, f.scenario) {
		return bad("--scenario %q: unknown scenario (want one of %s)", f.scenario, strings.Join(scenario.Names, ", "))
	}
	dynamic := f.scenario == "dynamic" || f.scenario == "churn-dynamic" || f.scenario == "loadbalance"
	churn := strings.HasPrefix(f.scenario, "churn")
	switch {
	case f.nodes < 5:
		return bad("--nodes %d below 5: every job needs r = 5 nodes", f.nodes)
	case f.nodes > scenario.MaxNodes:
		return bad("--nodes %d above %d: every node runs in this process", f.nodes, scenario.MaxNodes)
	case f.set["jobs"] && dynamic:
		return bad("--jobs applies to the static workloads (static, churn); %s runs for --duration", f.scenario)
	case f.set["jobs"] && (f.jobs < 1 || f.jobs > 1_000_000):
		return bad("--jobs %d out of 1..1000000", f.jobs)
	case f.set["rate"] && !(f.rate > 0 && f.rate <= 1000):
		return bad("--rate %v out of (0, 1000] jobs/s", f.rate)
	case (f.set["duration"] || f.set["job-length"]) && !dynamic:
		return bad("--duration and --job-length apply to the dynamic workloads (dynamic, churn-dynamic, loadbalance)")
	case f.set["duration"] && (f.duration < time.Second || f.duration > 24*time.Hour):
		return bad("--duration %v out of 1s..24h", f.duration)
	case f.set["job-length"] && f.jobLength < 0:
		return bad("--job-length %v is negative", f.jobLength)
	case f.set["clients"] && (f.clients < 1 || f.clients > 256):
		return bad("--clients %d out of 1..256", f.clients)
	case f.set["scale"] && !(f.scale >= 1 && f.scale <= 3600):
		return bad("--scale %v out of 1..3600", f.scale)
	case f.set["churn"] && !churn:
		return bad("--churn applies to the churn scenarios (churn, churn-dynamic)")
	case f.set["churn"] && f.churn < time.Second:
		return bad("--churn %v below 1s", f.churn)
	case f.timeout < 0:
		return bad("--timeout %v is negative", f.timeout)
	}
	if err := f.adv.ValidateAdversary(); err != nil {
		return bad("%v", err)
	}
	o := scenario.Options{Scenario: f.scenario, Nodes: f.nodes, Seed: f.seed, Dir: f.dir, Timeout: f.timeout, Adversary: f.adv}
	if f.set["jobs"] {
		o.Jobs = f.jobs
	}
	if f.set["rate"] {
		o.Rate = f.rate
	}
	if f.set["duration"] {
		o.Duration = f.duration
	}
	if f.set["job-length"] {
		o.JobLength = f.jobLength
		if f.jobLength == 0 {
			o.JobLength = time.Millisecond // 0 takes the default
		}
	}
	if f.set["clients"] {
		o.Clients = f.clients
	}
	if f.set["scale"] {
		o.Scale = f.scale
	}
	if f.set["churn"] {
		o.ChurnLife = f.churn
	}
	v := o
	if v.Dir == "" {
		v.Dir = "." // the command makes a temporary one
	}
	if err := v.Validate(); err != nil {
		return scenario.Options{}, usageError{err}
	}
	return o, nil
}

// behavioursHelp lists the Byzantine behaviours, one a line.
func behavioursHelp() string {
	var b strings.Builder
	for _, name := range testnet.Behaviours {
		fmt.Fprintf(&b, "  %-13s %s\n", name, testnet.BehaviourHelp[name])
	}
	return strings.TrimRight(b.String(), "\n")
}

func newTestnetRunCmd() *cobra.Command {
	fl := defaultRunFlags()
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a shortened scenario on real nodes in this process, beside the simulator",
		Long: `Starts N real nodes of the full stack in this process (libp2p mocknet),
with a project and client parties, and runs a shortened version of one of
the simulator's scenarios on them with every protocol period (republish,
T_rewrite, index expiry and quarantine, balancing interval and cool-down,
T_collect, lookup cache, region views) divided by --scale. It counts, per
wall second, the RPCs every node received: the busiest node and the mean
over nodes, with and without lookups, the lookup share, jobs lost against
the project's ledger, double claims (the clients' view and the nodes'
claim logs) and moves.

The simulator (up testnet sim) then runs the same scenario with the same
node count and parameters, and the two are printed side by side, with
notes on what they cannot be compared on.

Scenarios: static (--jobs at --rate, a gap, claims at --rate, an idle
time, results at --rate), dynamic (--rate for --duration, each job
--job-length long), churn and churn-dynamic (the same while nodes crash
and come back, mean lifetime and down time --churn), loadbalance (dynamic,
balancing off, then on).

With --out, writes report.md, compare.csv (the side-by-side table) and
series.csv (every second of both sides) there.

With --byzantine, that fraction of the real nodes misbehaves, each with
one of --behaviours (dealt in turn):
` + behavioursHelp(),
		Example: `  up testnet run --scenario dynamic --nodes 128 --out run-out
  up testnet run --scenario static --nodes 64 --jobs 500 --rate 20
  up testnet run --scenario churn --nodes 64 --churn 2m
  up testnet run --scenario loadbalance --nodes 64 --duration 3m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl.set = changedFlags(cmd.Flags(), runSetFlags...)
			o, err := fl.options()
			if err != nil {
				return err
			}
			return runScenario(cmd, o, fl.out)
		},
	}
	bindRunFlags(cmd.Flags(), &fl)
	return cmd
}

// bindRunFlags registers the flags of 'up testnet run' on f, defaulting
// to what fl holds.
func bindRunFlags(f *pflag.FlagSet, fl *runFlags) {
	f.StringVar(&fl.scenario, "scenario", fl.scenario, "scenario: "+strings.Join(scenario.Names, ", "))
	f.IntVar(&fl.nodes, "nodes", fl.nodes, "real nodes in this process (and simulated nodes), 5.."+fmt.Sprint(scenario.MaxNodes))
	f.IntVar(&fl.jobs, "jobs", 0, "static workloads: jobs in total (default 200)")
	f.Float64Var(&fl.rate, "rate", 0, "jobs/s submitted, and claim attempts/s (default 10)")
	f.DurationVar(&fl.duration, "duration", 0, "dynamic workloads: submission time (default 1m)")
	f.DurationVar(&fl.jobLength, "job-length", 0, "dynamic workloads: a job's compute time (default 10s)")
	f.IntVar(&fl.clients, "clients", 0, "client parties the real run's claim attempts take turns on (default 8)")
	f.Float64Var(&fl.scale, "scale", 0, "divide the production protocol periods by this (default 60: a second stands for a minute)")
	f.DurationVar(&fl.churn, "churn", 0, "churn scenarios: mean node lifetime and down time (default 24h / scale)")
	f.Uint64Var(&fl.seed, "seed", fl.seed, "seed of identities and every random choice, so a run replays")
	f.StringVar(&fl.out, "out", "", "write report.md, compare.csv and series.csv into this directory")
	f.StringVar(&fl.dir, "dir", "", "directory for the CA, node data and ledger (default: a temporary one, removed after)")
	f.DurationVar(&fl.timeout, "timeout", fl.timeout, "bound on each real run, setup included")
	f.Float64Var(&fl.adv.Byzantine, "byzantine", 0, "fraction of real nodes that are Byzantine (seeded choice)")
	f.StringSliceVar(&fl.adv.Behaviours, "behaviours", nil, "Byzantine behaviours, dealt in turn: "+strings.Join(testnet.Behaviours, ", "))
	f.Float64Var(&fl.adv.Skewed, "skewed", 0, "fraction of real nodes whose clock is off by up to --skew")
	f.DurationVar(&fl.adv.Skew, "skew", 0, "largest clock offset of a skewed node (uniform in ±skew)")
	f.Float64Var(&fl.adv.Jump, "jump", 0, "fraction of real nodes whose clock jumps an hour ahead 5 s into the run")
}

// runScenario runs the scenario o, in a temporary directory when o.Dir is
// empty, prints the report and writes its files into out unless out is
// empty.
func runScenario(cmd *cobra.Command, o scenario.Options, out string) error {
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "up-testnet-run-")
		if err != nil {
			return fmt.Errorf("create a directory for the nodes: %w", err)
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	o.Log = cmd.ErrOrStderr()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, runErr := scenario.Run(ctx, o)
	if len(rep.Runs) == 0 {
		return runErr
	}
	if out != "" {
		if err := rep.WriteFiles(out); err != nil {
			return err
		}
	}
	w := cmd.OutOrStdout()
	fmt.Fprint(w, rep.Markdown())
	if out != "" {
		fmt.Fprintf(w, "\nwrote %s, %s and %s\n", filepath.Join(out, "report.md"),
			filepath.Join(out, "compare.csv"), filepath.Join(out, "series.csv"))
	}
	return runErr
}
