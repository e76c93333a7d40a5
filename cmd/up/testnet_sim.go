package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet/sim"
)

// simFlags are the flags of 'up testnet sim'.
type simFlags struct {
	scenario   string
	nodes      int
	out        string
	seed       uint64
	duration   time.Duration
	limit      time.Duration
	jobs       int
	rate       float64
	balance    string
	churn      time.Duration
	coolDown   time.Duration
	piggyback  string
	wRate      float64
	regionBits int
	report     bool
	faults     faultFlags
	set        map[string]bool // flags given on the command line
}

// simSetFlags are the flags of 'up testnet sim' that override the
// scenario's preset only when given.
var simSetFlags = []string{"duration", "limit", "jobs", "rate", "churn", "cooldown", "wrate", "region-bits"}

// defaultSimFlags are the defaults of 'up testnet sim'.
func defaultSimFlags() simFlags {
	return simFlags{scenario: "static", nodes: 1024, seed: 1}
}

// config turns the flags into a simulation config; bad flags are usage
// errors.
func (f *simFlags) config() (sim.Config, error) {
	if f.out == "" {
		return sim.Config{}, usageError{fmt.Errorf("--out is required")}
	}
	if f.nodes < 2 || f.nodes > 100_000 {
		return sim.Config{}, usageError{fmt.Errorf("--nodes %d out of 2..100000", f.nodes)}
	}
	c, err := sim.Preset(f.scenario, f.nodes)
	if err != nil {
		return sim.Config{}, usageError{err}
	}
	c.Seed = f.seed
	if err := f.setWorkload(&c); err != nil {
		return sim.Config{}, err
	}
	if err := f.setOverlay(&c); err != nil {
		return sim.Config{}, err
	}
	faultTags, err := f.faults.apply(&c)
	if err != nil {
		return sim.Config{}, err
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return sim.Config{}, usageError{err}
	}
	c.Name = f.runName(c, faultTags)
	return c, nil
}

// setWorkload sets in c the workload flags given: --duration, --limit,
// --jobs and --rate; bad ones are usage errors.
func (f *simFlags) setWorkload(c *sim.Config) error {
	if f.set["duration"] {
		if f.duration <= 0 {
			return usageError{fmt.Errorf("--duration %v must be positive", f.duration)}
		}
		c.Duration = f.duration
	}
	if f.set["limit"] {
		if f.limit <= 0 {
			return usageError{fmt.Errorf("--limit %v must be positive", f.limit)}
		}
		c.Limit = f.limit
	}
	if f.set["jobs"] {
		if f.jobs < 1 {
			return usageError{fmt.Errorf("--jobs %d must be positive", f.jobs)}
		}
		c.Jobs = f.jobs
	}
	if f.set["rate"] {
		if !(f.rate > 0 && f.rate <= 10_000) {
			return usageError{fmt.Errorf("--rate %v out of (0, 10000] jobs/s", f.rate)}
		}
		c.Rate = f.rate
	}
	return nil
}

// setOverlay sets in c the overlay flags given: load balancing, index
// regions, piggy-backing and churn; bad ones are usage errors.
func (f *simFlags) setOverlay(c *sim.Config) error {
	switch f.balance {
	case "":
	case "on":
		c.Balance = true
	case "off":
		c.Balance = false
	default:
		return usageError{fmt.Errorf("--balance %q: want on or off", f.balance)}
	}
	if f.set["cooldown"] {
		if f.coolDown <= 0 {
			return usageError{fmt.Errorf("--cooldown %v must be positive", f.coolDown)}
		}
		c.CoolDown = f.coolDown
	}
	if f.set["wrate"] {
		if !(f.wRate > 0 && f.wRate <= 1e6) {
			return usageError{fmt.Errorf("--wrate %v out of (0, 1e6]", f.wRate)}
		}
		c.WRate = f.wRate
	}
	if f.set["region-bits"] {
		if f.regionBits < 0 || f.regionBits > 64 {
			return usageError{fmt.Errorf("--region-bits %d out of 0..64 (0: the default %d)", f.regionBits, keyspace.DefaultIndexBits)}
		}
		c.RegionBits = f.regionBits
	}
	switch f.piggyback {
	case "", "on":
	case "off":
		c.NoPiggyback = true
	default:
		return usageError{fmt.Errorf("--piggyback %q: want on or off", f.piggyback)}
	}
	if f.set["churn"] {
		if f.churn < 0 {
			return usageError{fmt.Errorf("--churn %v must not be negative", f.churn)}
		}
		c.ChurnLife, c.ChurnDown = f.churn, f.churn
	}
	return nil
}

// runName names the run c: the scenario, then what differs from its
// preset, the fault model's faultTags last.
func (f *simFlags) runName(c sim.Config, faultTags []string) string {
	var tags []string
	if c.Workload != sim.Static {
		tags = append(tags, fmt.Sprintf("%gjps", c.Rate))
	} else {
		tags = append(tags, fmt.Sprintf("%dj", c.Jobs))
	}
	if c.ChurnLife > 0 {
		tags = append(tags, fmt.Sprintf("churn%gh", c.ChurnLife.Hours()))
	}
	if f.set["cooldown"] {
		tags = append(tags, "cd"+strings.TrimSuffix(strings.TrimSuffix(c.CoolDown.String(), "0s"), "0m"))
	}
	if c.NoPiggyback {
		tags = append(tags, "nopb")
	}
	if f.set["wrate"] {
		tags = append(tags, fmt.Sprintf("wrate%g", c.WRate))
	}
	if f.set["region-bits"] {
		tags = append(tags, fmt.Sprintf("p%d", c.RegionBits))
	}
	tags = append(tags, faultTags...)
	return f.scenario + "-" + strings.Join(tags, "-")
}

func newTestnetSimCmd() *cobra.Command {
	fl := defaultSimFlags()
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the discrete-event simulator of the thesis' chapter 4 experiments",
		Long: `Simulates N nodes of the U.P. pool in virtual time, driving the same
protocol cores the nodes run (job merge, claim, index, load balancing,
republish plan) over a modelled overlay (XOR positions, Kademlia lookup
costs with a 90 s cache, lognormal wide-area latency, churn).

Scenarios: ` + strings.Join(sim.PresetNames(), ", ") + `.

Writes into --out/<run>/ the per-second metrics (metrics.csv), every
node's lifetime load (nodes.csv), summary.json and PNG plots laid out like
the thesis' Figures 4.1–4.14, and regenerates --out/report.md over every
run found in --out, with the thesis' figures beside U.P.'s and the
targets of issue 9.`,
		Example: `  up testnet sim --scenario static --nodes 1024 --out sim-out
  up testnet sim --scenario loadbalance-dynamic --rate 30 --nodes 1024 --out sim-out
  up testnet sim --scenario churn --churn 12h --jobs 5000 --nodes 256 --out sim-out
  up testnet sim --scenario static --jobs 20000 --byzantine 0.1 --skewed 0.3 --out sim-out`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl.set = changedFlags(cmd.Flags(), simSetFlags...)
			if fl.report {
				if fl.out == "" {
					return usageError{fmt.Errorf("--out is required")}
				}
				if err := sim.WriteReport(fl.out); err != nil {
					return err
				}
				if err := sim.WriteFaultReport(fl.out); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", filepath.Join(fl.out, "report.md"))
				return nil
			}
			c, err := fl.config()
			if err != nil {
				return err
			}
			return runSim(cmd, c, fl.out)
		},
	}
	bindSimFlags(cmd.Flags(), &fl)
	return cmd
}

// bindSimFlags registers the flags of 'up testnet sim' on f, defaulting
// to what fl holds.
func bindSimFlags(f *pflag.FlagSet, fl *simFlags) {
	f.StringVar(&fl.scenario, "scenario", fl.scenario, "scenario: "+strings.Join(sim.PresetNames(), ", "))
	f.IntVar(&fl.nodes, "nodes", fl.nodes, "overlay nodes at the start")
	f.StringVar(&fl.out, "out", "", "output directory (runs go in subdirectories; report.md covers them all)")
	f.Uint64Var(&fl.seed, "seed", fl.seed, "seed of every random choice: a run replays from it")
	f.DurationVar(&fl.duration, "duration", 0, "dynamic: submission time (default 5h); trace: trace length (default 37 days as 888h)")
	f.DurationVar(&fl.limit, "limit", 0, "stop at this simulated time (default: when the workload is done)")
	f.IntVar(&fl.jobs, "jobs", 0, "static: jobs in total (default 50000); trace: jobs over the trace")
	f.Float64Var(&fl.rate, "rate", 0, "jobs/s submitted and claimed (default 15 static, 10 dynamic and trace)")
	f.StringVar(&fl.balance, "balance", "", "load balancing on or off (default: the scenario's)")
	f.DurationVar(&fl.coolDown, "cooldown", 0, "load balancing: no balance for this long after a node moved or took over data (default 21m: index expiry + 5 min)")
	f.Float64Var(&fl.wRate, "wrate", 0, "load balancing: weight of one request per second in a node's load, against 1 per index entry and 3 per job it is the closest to (default 10)")
	f.IntVar(&fl.regionBits, "region-bits", 0, "p, bits of a keyword's index region: smaller spreads its entries and queries over more nodes (0: the default "+strconv.Itoa(keyspace.DefaultIndexBits)+")")
	f.StringVar(&fl.piggyback, "piggyback", "", "load balancing: on (default) reacts to loads piggy-backed on replies as the nodes do; off only to periodic probes")
	f.BoolVar(&fl.report, "report-only", false, "only regenerate --out/report.md (and faults.md, faults.png when runs have faults) from the runs already there")
	fl.faults.register(f)
	f.DurationVar(&fl.churn, "churn", 0, "mean node lifetime and down time, e.g. 24h or 12h (0: no churn; default: the scenario's)")
}

// runSim simulates c, writes its files into outDir/<run>/, regenerates
// the reports in outDir and prints the run's summary.
func runSim(cmd *cobra.Command, c sim.Config, outDir string) error {
	// The simulator's heap is mostly long-lived job state: collect
	// less often than the default.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	s, err := sim.New(c)
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errw := cmd.ErrOrStderr()
	start := time.Now()
	fmt.Fprintf(errw, "simulating %s: %d nodes, %s\n", c.Name, c.Nodes, c.Workload)
	last := start
	err = s.Run(ctx, func(p sim.Progress) {
		if time.Since(last) < 5*time.Second {
			return
		}
		last = time.Now()
		fmt.Fprintf(errw, "  %8v simulated, %7d jobs submitted, %7d collected, %s wall\n",
			p.Now, p.Submitted, p.Collected, time.Since(start).Round(time.Second))
	})
	if err != nil {
		return err
	}
	wall := time.Since(start)
	sm := s.Summary(wall)
	dir := filepath.Join(outDir, sim.RunDir(c))
	if err := s.WriteFiles(dir, sm); err != nil {
		return err
	}
	if err := sim.WriteReport(outDir); err != nil {
		return err
	}
	if err := sim.WriteFaultReport(outDir); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	printSimSummary(out, c, sm, wall)
	fmt.Fprintf(out, "wrote %s and %s\n", dir, filepath.Join(outDir, "report.md"))
	return nil
}

// printSimSummary prints the figures of the run c, simulated in wall.
func printSimSummary(out io.Writer, c sim.Config, sm sim.Summary, wall time.Duration) {
	fmt.Fprintf(out, "%s: %d nodes, %v simulated in %v\n", c.Name, c.Nodes, sm.Simulated, wall.Round(time.Millisecond))
	fmt.Fprintf(out, "jobs: %d submitted, %d claimed, %d finished, %d collected; %d lost, %d double claims; %d moves\n",
		sm.Submitted, sm.Claimed, sm.Finished, sm.Collected, sm.Lost, sm.Doubles, sm.Moves)
	printFaults(out, sm.Faults)
	fmt.Fprintf(out, "RPC/s per node: mean %.2f; busiest node peak %.0f, median %.0f; busiest lifetime average %.1f (%.1f× the mean); lookups %.0f %% of RPCs\n",
		sm.MeanRPC, sm.PeakRPCMax, sm.MedianRPCMax, sm.BusiestAvg, sm.BusiestOverMean, 100*sm.LookupShare)
	fmt.Fprintf(out, "busiest/mean over 5-min windows: median %.2f×, last hour of submissions %.2f× (a perfectly even load: %.2f×)\n",
		sm.WindowMaxOverMean, sm.FinalHourWindowMaxOverMean, sm.EvenWindowMaxOverMean)
}
