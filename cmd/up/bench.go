package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/up-pool/up/testnet/bench"
)

// benchFlags are the flags of 'up bench'.
type benchFlags struct {
	o           bench.Options
	asJSON      bool
	noShare     bool
	profile     string
	heapProfile string
	heapPlot    string
}

// defaultBenchFlags are the defaults of 'up bench'.
func defaultBenchFlags() benchFlags {
	return benchFlags{o: bench.Options{Nodes: 16, R: 5, Clients: 4, Slots: 2, Jobs: 500, Keywords: 1, Copies: 1,
		Batch: 32, Exec: bench.ExecInProcess, Seed: 1, Timeout: 5 * time.Minute}}
}

func newBenchCmd() *cobra.Command {
	fl := defaultBenchFlags()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the cost of a job's whole lifecycle on an in-process network",
		Long: `Starts in this process N nodes on loopback TCP (full libp2p stack: TCP,
Noise, yamux), a project and C clients running a zero-work built-in
application (hashchain 0: one SHA-256), and drives every job through its
whole lifecycle: submit with r acknowledgements, index write, query,
claim, confirm, result to the job's r nodes, finished entry, harvest
(fetch, open, verify, record in the ledger), validate, collect.

It prints, measured from the first submission to the last harvest (setup
excluded): jobs/s sustained; CPU µs per job for the whole process
(getrusage) and split by party (project, clients, nodes and runtime) from
a labelled CPU profile; RPCs per job served by the nodes, by protocol and
by requester, beside the minimum of a job placed alone 4r + keywords + 4
(a batch's jobs share their store, index writes and collect); DHT
lookups per job; p50/p99 time from submit to harvest and of one claim;
bytes on the wire per job; peak RSS.

With --rate 0 the project submits as fast as the pool takes jobs,
keeping at most --window jobs submitted and not yet harvested; with
--rate R it offers R jobs/s. The clients are the real worker client of
'up client run'; --exec inproc (default) has them call the application in
this process, --exec subprocess start 'up app exec' per job.`,
		Example: `  up bench --jobs 500
  up bench --nodes 32 --clients 8 --jobs 2000 --rate 200 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the up binary: %w", err)
			}
			o, err := fl.options(self)
			if err != nil {
				return err
			}
			return runBench(cmd, fl, o)
		},
	}
	bindBenchFlags(cmd.Flags(), &fl)
	return cmd
}

// bindBenchFlags registers the flags of 'up bench' on f, defaulting to
// what fl holds.
func bindBenchFlags(f *pflag.FlagSet, fl *benchFlags) {
	f.IntVar(&fl.o.Nodes, "nodes", fl.o.Nodes, "number of nodes")
	f.IntVar(&fl.o.R, "replication", fl.o.R, "r, the number of closest nodes that hold each job")
	f.IntVar(&fl.o.R, "r", fl.o.R, "deprecated: use --replication")
	_ = f.MarkHidden("r")
	f.IntVar(&fl.o.Clients, "clients", fl.o.Clients, "number of clients")
	f.IntVar(&fl.o.Slots, "slots", fl.o.Slots, "jobs each client runs in parallel")
	f.IntVar(&fl.o.ClaimMany, "claim-many", 0, "most jobs of one place (a submission batch) a client claims at once, one request per node (1 to 32; 0: chosen per claim, as 'up client run' does)")
	f.IntVar(&fl.o.Jobs, "jobs", fl.o.Jobs, "jobs to run through their lifecycle (a multiple of --copies)")
	f.IntVar(&fl.o.Keywords, "keywords", fl.o.Keywords, "keywords per job (the project's name and keywords-1 more)")
	f.IntVar(&fl.o.Copies, "copies", fl.o.Copies, "redundant copies of each work unit (validated by quorum)")
	f.Float64Var(&fl.o.Rate, "rate", 0, "offered load in jobs/s (0: as fast as possible)")
	f.IntVar(&fl.o.Window, "window", 0, "with --rate 0, most jobs submitted and not yet harvested (0: 8 × clients × slots, at least 4 × batch)")
	f.IntVar(&fl.o.Batch, "batch", fl.o.Batch, "with --rate 0, jobs per submission")
	f.DurationVar(&fl.o.HarvestEvery, "harvest-every", 0, "least time between the starts of two harvest passes, as a project harvesting on a schedule (0: again at once; give a --window of the jobs finished meanwhile)")
	f.StringVar(&fl.o.Exec, "exec", fl.o.Exec, "how clients run the application: inproc or subprocess")
	f.BoolVar(&fl.asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&fl.noShare, "no-share", false, "do not profile the CPU to split it by party")
	f.StringVar(&fl.heapPlot, "heapplot", "", "write the live heap against the jobs harvested, sampled every 2 s, as a PNG to this file")
	f.StringVar(&fl.heapProfile, "memprofile", "", "write the heap profile taken after the last harvest (what the run retains) to this file")
	f.IntVar(&fl.o.HeapProfileEvery, "memprofile-every", 0, "with --memprofile FILE, also write FILE.<harvested> each time another this many jobs are harvested (diff them with pprof -base)")
	f.StringVar(&fl.profile, "cpuprofile", "", "write the CPU profile of the measured phase (setup excluded) to this file, samples labelled by party")
	f.StringVar(&fl.o.Dir, "dir", "", "directory for the CA, nodes and ledger (default: a temporary one, removed after)")
	f.Uint64Var(&fl.o.Seed, "seed", fl.o.Seed, "seed of identities, so a run replays its keyspace")
	f.DurationVar(&fl.o.Timeout, "timeout", fl.o.Timeout, "give up after this long")
	f.DurationVar(&fl.o.TCollect, "tcollect", 0, "nodes' T_collect (0: the production 2 h, no check); when set, wait for the stores and indexes to empty and report what is left")
}

// options checks the flags and turns them into bench options whose
// clients launch 'self app exec'; bad flags are usage errors. Dir stays
// empty when --dir is: the run makes a temporary one. It touches no file.
func (fl benchFlags) options(self string) (bench.Options, error) {
	o := fl.o
	for _, c := range []struct {
		name string
		v    int
	}{{"nodes", o.Nodes}, {"replication", o.R}, {"clients", o.Clients}, {"slots", o.Slots}, {"jobs", o.Jobs},
		{"keywords", o.Keywords}, {"copies", o.Copies}, {"batch", o.Batch}} {
		if c.v == 0 {
			return bench.Options{}, usageError{fmt.Errorf("--%s 0: must be at least 1", c.name)}
		}
	}
	if o.Timeout <= 0 {
		return bench.Options{}, usageError{fmt.Errorf("--timeout %v: must be positive", o.Timeout)}
	}
	if o.HeapProfileEvery < 0 || o.HeapProfileEvery > 0 && fl.heapProfile == "" {
		return bench.Options{}, usageError{fmt.Errorf("--memprofile-every %d: needs --memprofile and a positive count", o.HeapProfileEvery)}
	}
	o.Launcher = []string{self, "app", "exec"}
	o.ProjectShare = !fl.noShare
	v := o
	if v.Dir == "" {
		v.Dir = "x" // validated before a directory is made
	}
	if err := v.Validate(); err != nil {
		return bench.Options{}, usageError{fmt.Errorf("--%w", err)}
	}
	return o, nil
}

// runBench runs the benchmark o with the files fl names, prints its
// report and checks that its figures add up.
func runBench(cmd *cobra.Command, fl benchFlags, o bench.Options) error {
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "up-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Log = cmd.ErrOrStderr()
	if fl.profile != "" {
		pf, err := os.Create(fl.profile)
		if err != nil {
			return err
		}
		defer pf.Close()
		o.CPUProfile = pf
	}
	if fl.heapProfile != "" {
		hf, err := os.Create(fl.heapProfile)
		if err != nil {
			return err
		}
		defer hf.Close()
		o.HeapProfile = hf
		o.HeapProfileAt = func(harvested int64) (io.WriteCloser, error) {
			return os.Create(fmt.Sprintf("%s.%d", fl.heapProfile, harvested))
		}
	}
	rep, err := bench.Run(ctx, o)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if fl.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.Format(out)
	}
	if fl.heapPlot != "" {
		if err := rep.PlotHeap(fl.heapPlot); err != nil {
			return err
		}
	}
	if err := rep.Consistent(); err != nil {
		return fmt.Errorf("bench: the figures do not add up: %w", err)
	}
	return nil
}
