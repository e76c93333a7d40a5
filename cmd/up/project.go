package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/project"
)

func newProjectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "project",
		Short: "Submit jobs, harvest results and grant credit, from a project workstation",
		Long: `A project signs its jobs, submits them to the overlay and harvests the
results later; its data directory holds its keys and the ledger
(ledger.db, SQLite), which records every job and result durably, so a
crashed or interrupted command can simply be run again.`,
	}
	cmd.AddCommand(newProjectInitCmd(), newProjectSubmitCmd(), newProjectHarvestCmd(), newProjectStatusCmd(), newProjectResultsCmd(), newProjectServeCmd(), newProjectDescribeCmd(),
		newProjectSequenceCmd())
	return cmd
}

func newProjectInitCmd() *cobra.Command {
	var data, caFile, name string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a project's data directory: signing and result keys, certificate request",
		Example: `  up project init --data lhc --ca ca/ca.crt --name lhc
  up ca issue --data ca --role project --in lhc/project.csr --out lhc/project.crt`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("data", data, "ca", caFile, "name", name); err != nil {
				return err
			}
			return initParty(cmd.OutOrStdout(), data, certs.RoleProject, name, caFile)
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "data directory to create (required)")
	f.StringVar(&caFile, "ca", "", "the CA's certificate, ca.crt (required)")
	f.StringVar(&name, "name", "", "the project's name: its keyword and certificate name (required)")
	return cmd
}

// projectConn are the flags every networked project command takes.
type projectConn struct {
	data          string
	bootstrap     []string
	bootstrapFile string
	quiet         bool
	logLevel      string
	logFormat     string
}

func (c *projectConn) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.data, "data", "", "data directory made by 'up project init' (required)")
	f.StringSliceVar(&c.bootstrap, "bootstrap", nil, bootstrapHelp)
	f.StringVar(&c.bootstrapFile, "bootstrap-file", "", bootstrapFileHelp)
	f.BoolVar(&c.quiet, "quiet", false, "no progress bar")
	f.StringVar(&c.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	f.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
}

// open loads the project, joins the overlay and opens the ledger.
func (c *projectConn) open(ctx context.Context, stderr io.Writer) (*project.Project, *project.Ledger, func(), error) {
	if err := required("data", c.data); err != nil {
		return nil, nil, nil, err
	}
	boot, err := bootstrapPeers(c.bootstrap, c.bootstrapFile)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(boot) == 0 {
		return nil, nil, nil, usageError{fmt.Errorf("missing --bootstrap or --bootstrap-file: give a node to join through")}
	}
	logger, err := newLogger(stderr, c.logLevel, c.logFormat)
	if err != nil {
		return nil, nil, nil, err
	}
	id, err := keystore.Load(c.data, certs.RoleProject, time.Now())
	if err != nil {
		return nil, nil, nil, err
	}
	lock, err := keystore.LockDir(c.data)
	if err != nil {
		return nil, nil, nil, err
	}
	l, err := project.OpenLedger(filepath.Join(c.data, "ledger.db"))
	if err != nil {
		lock.Unlock()
		return nil, nil, nil, err
	}
	a, err := agent.Open(agent.Config{Identity: id, Logger: logger})
	if err != nil {
		l.Close()
		lock.Unlock()
		return nil, nil, nil, err
	}
	if err := a.Join(ctx, boot); err != nil {
		a.Close()
		l.Close()
		lock.Unlock()
		return nil, nil, nil, err
	}
	p, err := project.New(a)
	if err != nil {
		a.Close()
		l.Close()
		lock.Unlock()
		return nil, nil, nil, err
	}
	return p, l, func() { a.Close(); l.Close(); lock.Unlock() }, nil
}

func newProjectSubmitCmd() *cobra.Command {
	var c projectConn
	cmd := &cobra.Command{
		Use:   "submit JOBFILE",
		Short: "Submit the jobs of a job file (YAML or JSON; a template with a sweep)",
		Long: `Sign and submit every job of a job file. Jobs are recorded in the ledger
before they are sent, so running the same command again after a crash
sends only what was not acknowledged by r replicas, never a job twice.

Job file (only app is required):
  app: mandelbrot                 # application (the client must allow it)
  args: ["{x}", "{y}", "64"]      # {name}: a sweep parameter (each must be used here)
  keywords: [fractal]             # index keywords clients query; the project's name is added
  resources: [mem:small]          # resource classes (keywords too)
  t_finish: 10m                   # how long a claim lasts (default 1h)
  lifetime: 14d                   # nodes drop the job this long after submission (default 14d; 336h works too)
  copies: 2                       # redundant copies, 1..16 (default 1; quorum validation)
  commit: false                   # copies ≥ 2 commit before they reveal unless this says false
  inputs: [{url: https://..., sha256: <64 hex>}, {file: data/a.bin}]  # file: uploaded as a blob
  module: mandelbrot.wasm         # a local WebAssembly module: app is then its display name
  sweep: {x: {from: 0, to: 7}, y: [0.5, 1.5]}`,
		Example: `  up project submit --data lhc --bootstrap /ip4/127.0.0.1/tcp/4101/p2p/12D3KooW... jobs.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("want one job file, got %d arguments", len(args))}
			}
			file, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("job file: %w", err)
			}
			if _, _, err := project.ParseJobFile(file, ""); err != nil {
				return fmt.Errorf("job file %s: %w", args[0], err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			p, l, done, err := c.open(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			rep, err := p.SubmitFile(ctx, l, file, args[0], bar(cmd.ErrOrStderr(), c.quiet, "submit"))
			if err != nil {
				return err
			}
			for i, e := range rep.Errors {
				if i == 10 {
					fmt.Fprintf(cmd.ErrOrStderr(), "... and %d more errors\n", len(rep.Errors)-10)
					break
				}
				fmt.Fprintln(cmd.ErrOrStderr(), e)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d units, %d jobs: %d submitted now, %d before, %d failed\n",
				args[0], rep.Units, rep.Jobs, rep.Submitted, rep.Already, len(rep.Errors))
			if b := rep.Blobs; b.Files > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "blobs: %d local files, %d bytes; uploaded %d bytes (inputs × r = %d × %d = %d)\n",
					b.Files, b.Bytes, b.Uploaded, b.Bytes, b.Replication, b.Bytes*int64(b.Replication))
			}
			if len(rep.Errors) > 0 {
				return fmt.Errorf("%d jobs not submitted (run the command again to retry them)", len(rep.Errors))
			}
			return nil
		},
	}
	c.add(cmd)
	return cmd
}

// harvestRun is one 'up project harvest': its flags and the loop they
// drive.
type harvestRun struct {
	conn              projectConn
	follow, untilDone bool
	interval, timeout time.Duration
	maxCopies         int
	validator         string
	lostAfter         time.Duration
}

func newProjectHarvestCmd() *cobra.Command {
	var h harvestRun
	cmd := &cobra.Command{
		Use:   "harvest",
		Short: "Fetch finished results, store them in the ledger, tell the nodes they are collected",
		Long: `Harvest walks the index region of "<project>:finished", fetches each new
result, decrypts it and checks the client's certificate and signature,
stores it durably in the ledger, and only then tells the job's nodes it is
collected. With copies >= 2 a unit's results are compared (byte equality,
or the --validator program) and a quorum makes the canonical result;
units whose copies disagree get another copy. A job listed finished whose
result none of its nodes can serve for --lost-after (on this machine's
clock, from the first harvest that found it so; its closest nodes asked,
none holding it ready or claimed) is declared lost: its unit gets another
copy and its nodes are told it is collected. With --follow it keeps
harvesting until interrupted; with --until-done, until every unit of the
ledger has a canonical result (--timeout bounds the wait).`,
		Example: `  up project harvest --data lhc --bootstrap /ip4/127.0.0.1/tcp/4101/p2p/12D3KooW... --follow
  up project harvest --data lhc --bootstrap-file boot.txt --until-done --interval 2s --timeout 10m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return h.run(cmd) },
	}
	h.conn.add(cmd)
	f := cmd.Flags()
	f.BoolVar(&h.follow, "follow", false, "keep harvesting until interrupted")
	f.BoolVar(&h.untilDone, "until-done", false, "keep harvesting until every unit has a canonical result")
	f.DurationVar(&h.timeout, "timeout", 0, "with --until-done: give up after this long, exit 1 (0: never)")
	f.StringVar(&h.validator, "validator", "", "program that compares two copies' outputs: run as PROGRAM A B, exit 0 = they agree (default: byte equality)")
	f.DurationVar(&h.interval, "interval", 30*time.Second, "time between harvests with --follow")
	f.IntVar(&h.maxCopies, "max-copies", 0, "most copies a unit may get when results disagree (default: asked + 2)")
	f.DurationVar(&h.lostAfter, "lost-after", project.DefaultLostAfter, "T_lost: declare a finished job lost when no node has served its result for this long")
	return cmd
}

// run checks the flags, opens the project and harvests once, or in a
// loop with --follow or --until-done.
func (h *harvestRun) run(cmd *cobra.Command) error {
	if h.interval <= 0 {
		return usageError{fmt.Errorf("--interval %s must be positive", h.interval)}
	}
	if h.lostAfter <= 0 {
		return usageError{fmt.Errorf("--lost-after %s must be positive", h.lostAfter)}
	}
	if h.timeout < 0 || (h.timeout > 0 && !h.untilDone) {
		return usageError{fmt.Errorf("--timeout %s: want a positive duration, with --until-done", h.timeout)}
	}
	var equal project.Equal
	if h.validator != "" {
		path, err := exec.LookPath(h.validator)
		if err != nil {
			return usageError{fmt.Errorf("--validator %q: %w", h.validator, err)}
		}
		equal = project.ExternalEqual(path)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, l, done, err := h.conn.open(ctx, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer done()
	var deadline <-chan time.Time
	if h.timeout > 0 {
		deadline = time.After(h.timeout)
	}
	for {
		rep, err := p.Harvest(ctx, l, project.HarvestOptions{MaxCopies: h.maxCopies, Equal: equal, LostAfter: h.lostAfter}, bar(cmd.ErrOrStderr(), h.conn.quiet, "harvest"))
		if err != nil {
			return err
		}
		for _, e := range rep.Errors {
			fmt.Fprintln(cmd.ErrOrStderr(), e)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s harvest: %d finished found, %d new results, %d collected, %d refused, %d lost, %d units decided, %d extra copies, %d trickles, %d credit receipts signed, %d published\n",
			time.Now().Format(time.TimeOnly), rep.Finished, rep.Recorded, rep.Collected, rep.Refused, rep.Lost, rep.Decided, rep.Extra,
			rep.Trickles.Recorded, rep.Credit.Issued, rep.Credit.Published)
		failed := harvestFailure(rep)
		if !h.follow && !h.untilDone {
			return failed
		}
		if failed != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "up: %v\n", failed) // the loop goes on: the next harvest retries
		}
		open := 0
		if h.untilDone {
			st, err := l.Stats(time.Now())
			if err != nil {
				return err
			}
			if open = undecidedUnits(st); open == 0 && failed == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "every unit has a canonical result (%d units)\n", st.Units[project.UnitValid])
				// The last results' credit, whenever the receipts were last issued.
				cr, err := p.IssueCredit(ctx, l)
				fmt.Fprintf(cmd.OutOrStdout(), "credit receipts: %d signed, %d published\n", cr.Issued, cr.Published)
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-deadline:
			return fmt.Errorf("harvest: %d units still without a canonical result after %s ('up project status' says why)", open, h.timeout)
		case <-time.After(h.interval):
		}
	}
}

// undecidedUnits counts the ledger's units without a canonical result.
func undecidedUnits(st project.Stats) int {
	n := 0
	for status, count := range st.Units {
		if status != project.UnitValid {
			n += count
		}
	}
	return n
}

// harvestFailure is the error a harvest that could not read the index or
// fetch every new result exits with (nil when it did): what it recorded
// stays recorded, and running it again retries the rest.
func harvestFailure(rep project.HarvestReport) error {
	if err := rep.Err(); err != nil {
		return fmt.Errorf("harvest failed (run it again to retry): %w", err)
	}
	return nil
}

func newProjectStatusCmd() *cobra.Command {
	var data string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "status",
		Short:   "Show jobs by state, throughput, stuck jobs and credit per client (from the ledger; offline)",
		Example: `  up project status --data lhc`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("data", data); err != nil {
				return err
			}
			path := filepath.Join(data, "ledger.db")
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("no ledger at %s: submit jobs first", path)
			}
			l, err := project.OpenLedger(path)
			if err != nil {
				return err
			}
			defer l.Close()
			st, err := l.Stats(time.Now())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			return printProjectStatus(cmd.OutOrStdout(), st)
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "project data directory (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func newProjectResultsCmd() *cobra.Command {
	var data, outDir string
	var jsonl, canonicalOnly bool
	cmd := &cobra.Command{
		Use:   "results",
		Short: "Export harvested results as files or JSON lines",
		Long: `Exports the harvested results from the ledger: with --out, each result's
standard output as unitNNNNNN-<job>.out, and the output files its job named
(outputs: in the job file) under unitNNNNNN-<job>.files/; with --jsonl, one
JSON line per result, "output" its standard output and "files" its output
files by name (base64).`,
		Example: `  up project results --data lhc --out results/      # one file per unit (its canonical result)
  up project results --data lhc --jsonl > results.jsonl`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("data", data); err != nil {
				return err
			}
			if (outDir == "") == !jsonl {
				return usageError{fmt.Errorf("give either --out DIR or --jsonl")}
			}
			path := filepath.Join(data, "ledger.db")
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("no ledger at %s: submit jobs first", path)
			}
			l, err := project.OpenLedger(path)
			if err != nil {
				return err
			}
			defer l.Close()
			if outDir != "" {
				if err := os.MkdirAll(outDir, 0o755); err != nil {
					return err
				}
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			n := 0
			err = l.EachResult(func(r project.Result, unit int, canonical string) error {
				if canonicalOnly && r.CID != canonical {
					return nil
				}
				n++
				stdout, files, err := unpackResult(r)
				if err != nil {
					return err
				}
				if jsonl {
					return enc.Encode(map[string]any{"unit": unit, "job": r.CID, "canonical": r.CID == canonical, "client": r.Client,
						"exit_code": r.ExitCode, "error": r.Error, "valid": r.Valid, "cpu_ms": r.CPU.Milliseconds(), "output": stdout, "files": files})
				}
				return writeResult(outDir, fmt.Sprintf("unit%06d-%s", unit, r.CID), stdout, files)
			})
			if err != nil {
				return err
			}
			if outDir != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "%d results written to %s\n", n, outDir)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "project data directory (required)")
	f.StringVar(&outDir, "out", "", "write each result to a file in this directory")
	f.BoolVar(&jsonl, "jsonl", false, "print JSON lines on stdout")
	f.BoolVar(&canonicalOnly, "canonical", true, "only each unit's canonical result")
	return cmd
}
