package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/blob/cache"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/sandbox"
	"github.com/up-pool/up/web"
	"github.com/up-pool/up/wire"
)

func newClientCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Run a worker client: find, claim and run jobs",
		Long: `A worker client finds jobs of the projects it is attached to through the
index, claims them, runs their applications under limits (only those the
volunteer allowed) and returns sealed, signed results.`,
	}
	cmd.AddCommand(newClientInitCmd(), newClientRunCmd(), newClientStatusCmd(), newClientExplainCmd(), newClientHistoryCmd(), newClientCreditCmd(),
		newClientActionCmd("pause"), newClientActionCmd("resume"), newClientActionCmd("attach"), newClientActionCmd("detach"))
	return cmd
}

func newClientInitCmd() *cobra.Command {
	var data, caFile, name string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a client's data directory: keys, identity and certificate request",
		Example: `  up client init --data w1 --ca ca/ca.crt --name alice-laptop
  up ca issue --data ca --role client --in w1/client.csr --out w1/client.crt`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("data", data, "ca", caFile, "name", name); err != nil {
				return err
			}
			return initParty(cmd.OutOrStdout(), data, certs.RoleClient, name, caFile)
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "data directory to create (required)")
	f.StringVar(&caFile, "ca", "", "the CA's certificate, ca.crt (required)")
	f.StringVar(&name, "name", "", "this client's name, for its certificate (required)")
	return cmd
}

// clientRunFlags are the flags of 'up client run'.
type clientRunFlags struct {
	data          string
	bootstrap     []string
	bootstrapFile string
	projects      []string
	allow         []string
	allowWASM     []string
	external      []string
	exclude       []string
	slots         int
	claimMany     int
	memory        string
	blobCache     string
	bandwidth     string
	work          string
	httpAddr      string
	maxJobs       int
	backoffMax    time.Duration
	logLevel      string
	logFormat     string
}

// clientSetup is what the flags say, before any file or network is used.
type clientSetup struct {
	projects  []client.Project
	allow     map[string][]string
	allowWASM []string
	external  map[string]string
	memory    int64
	blobCache int64 // bytes of DATA/blob-cache
	bw        int64
}

// parse checks the flags. It touches no file and no network.
func (f *clientRunFlags) parse() (clientSetup, error) {
	var s clientSetup
	if err := required("data", f.data); err != nil {
		return s, err
	}
	if len(f.bootstrap) == 0 && f.bootstrapFile == "" {
		return s, usageError{fmt.Errorf("missing --bootstrap: give at least one node to join through")}
	}
	if _, err := parseBootstrap(f.bootstrap); err != nil {
		return s, err
	}
	if len(f.projects) == 0 {
		return s, usageError{fmt.Errorf("missing --project: attach at least one project")}
	}
	projects, seen, err := parseProjects(f.projects)
	if err != nil {
		return s, err
	}
	s.projects = projects
	s.allow = map[string][]string{}
	for _, a := range f.allow {
		proj, list, ok := strings.Cut(a, "=")
		if !ok || proj == "" || list == "" {
			return s, usageError{fmt.Errorf("--allow %q: want PROJECT=APP[,APP...]", a)}
		}
		if !seen[proj] {
			return s, usageError{fmt.Errorf("--allow %q: project %q is not attached with --project", a, proj)}
		}
		s.allow[proj] = append(s.allow[proj], strings.Split(list, ",")...)
	}
	for _, p := range f.allowWASM {
		switch {
		case !seen[p]:
			return s, usageError{fmt.Errorf("--allow-wasm %q: want the name of a project attached with --project", p)}
		case slices.Contains(s.allowWASM, p):
			return s, usageError{fmt.Errorf("--allow-wasm %q: repeated project", p)}
		}
		s.allowWASM = append(s.allowWASM, p)
	}
	s.external = map[string]string{}
	for _, e := range f.external {
		name, path, ok := strings.Cut(e, "=")
		if !ok || name == "" || !filepath.IsAbs(path) {
			return s, usageError{fmt.Errorf("--exec %q: want NAME=/absolute/path", e)}
		}
		s.external[name] = path
	}
	if f.slots < 1 || f.slots > 1024 {
		return s, usageError{fmt.Errorf("--slots %d out of 1..1024", f.slots)}
	}
	if f.claimMany < 0 || f.claimMany > wire.MaxClaimMany {
		return s, usageError{fmt.Errorf("--claim-many %d out of 0..%d", f.claimMany, wire.MaxClaimMany)}
	}
	if f.backoffMax < 0 {
		return s, usageError{fmt.Errorf("--backoff-max %s is negative", f.backoffMax)}
	}
	if f.maxJobs < 0 {
		return s, usageError{fmt.Errorf("--max-jobs %d is negative", f.maxJobs)}
	}
	if f.bandwidth != "" {
		bw, err := parseBandwidth(f.bandwidth)
		if err != nil {
			return s, usageError{fmt.Errorf("--bandwidth %q: %v", f.bandwidth, err)}
		}
		s.bw = bw
	}
	s.blobCache = defaultBlobCache
	if f.blobCache != "" {
		b, err := parseBytes(f.blobCache)
		if err != nil || b < 1<<20 {
			return s, usageError{fmt.Errorf("--blob-cache %q: want a size of at least 1MiB, e.g. 4GiB", f.blobCache)}
		}
		s.blobCache = b
	}
	if f.memory != "" {
		m, err := parseBytes(f.memory)
		if err != nil {
			return s, usageError{fmt.Errorf("--memory %q: %v", f.memory, err)}
		}
		s.memory = m
	}
	return s, nil
}

// parseProjects reads the --project values (NAME or NAME:SHARE) and
// returns the projects and the set of their names.
func parseProjects(values []string) ([]client.Project, map[string]bool, error) {
	var out []client.Project
	seen := map[string]bool{}
	for _, p := range values {
		name, share := p, 100.0
		if i := strings.LastIndexByte(p, ':'); i > 0 {
			v, err := strconv.ParseFloat(p[i+1:], 64)
			if err != nil || v <= 0 {
				return nil, nil, usageError{fmt.Errorf("--project %q: the share after ':' must be a positive number", p)}
			}
			name, share = p[:i], v
		}
		if seen[name] {
			return nil, nil, usageError{fmt.Errorf("--project %q: repeated project", p)}
		}
		if err := checkPartyName(name); err != nil {
			return nil, nil, usageError{fmt.Errorf("--project %q: %w", p, err)}
		}
		seen[name] = true
		out = append(out, client.Project{Name: name, Share: share})
	}
	return out, seen, nil
}

// parseBytes parses sizes such as 512MiB, 2GiB, 1048576.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive size such as 2GiB")
	}
	return n * mult, nil
}

// defaultClientRunFlags are the defaults of 'up client run'.
func defaultClientRunFlags() clientRunFlags {
	return clientRunFlags{slots: runtime.NumCPU(), backoffMax: 5 * time.Minute, logLevel: "info", logFormat: "text"}
}

func newClientRunCmd() *cobra.Command {
	fl := defaultClientRunFlags()
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the worker until interrupted",
		Long: `Run the worker until interrupted: find, claim and run the attached
projects' jobs, and return their results.

A job runs a native application only if --allow names it for the project
(an external one also needs --exec). A job whose application is a
WebAssembly module runs only for a project named with --allow-wasm: any
module the project signs into a job then runs, in-process in the sandbox,
which gives it its own work directory and nothing else (no network, no
environment, no other file) and holds it to memory and time limits.
Modules and blob inputs come from the overlay's blobs, fetched from their
nodes in parallel, every chunk checked, and kept in DATA/blob-cache (up to
--blob-cache bytes) so the jobs that share one fetch it once.

--http serves the local API: /status, /metrics, and the everyday
controls ('up client pause', 'resume', 'attach', 'detach', 'explain',
'history'). On a loopback address it needs no token; on any other, every
request must carry the token of DATA/http.token (made at the first start;
its path is printed). Pause, attach and detach are kept in
DATA/controls.json and applied at start over the flags: a paused client
starts paused; a project attached at run time stays attached, with its
share, whether --project names it or not; a project detached at run time
stays detached, even when --project names it, until 'up client attach'
(or the file is removed). The client claims only jobs it can finish
before their T_finish, judged from its on and off periods and each
application's run times, kept in DATA/feasible.json; a job it can no
longer finish in time is given back early.`,
		Example: `  up client run --data w1 --bootstrap /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW... \
      --project lhc:75 --project cms:25 --allow lhc=sixtrack,hashchain --allow cms='*' \
      --exec sixtrack=/opt/lhc/sixtrack --allow-wasm cms --http 127.0.0.1:8050`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			setup, err := fl.parse()
			if err != nil {
				return err
			}
			return runClient(cmd, fl, setup)
		},
	}
	bindClientRunFlags(cmd.Flags(), &fl)
	return cmd
}

// bindClientRunFlags registers the flags of 'up client run' on f,
// defaulting to what fl holds.
func bindClientRunFlags(f *pflag.FlagSet, fl *clientRunFlags) {
	f.StringVar(&fl.data, "data", fl.data, "data directory made by 'up client init' (required)")
	f.StringSliceVar(&fl.bootstrap, "bootstrap", fl.bootstrap, bootstrapHelp)
	f.StringVar(&fl.bootstrapFile, "bootstrap-file", fl.bootstrapFile, bootstrapFileHelp)
	f.StringSliceVar(&fl.projects, "project", fl.projects, "attach a project: NAME or NAME:SHARE (repeatable, required)")
	f.StringArrayVar(&fl.allow, "allow", fl.allow, "allow applications: PROJECT=APP[,APP...], '*' for every built-in (repeatable)")
	f.StringArrayVar(&fl.allowWASM, "allow-wasm", fl.allowWASM, "allow a project's WebAssembly modules, run in the sandbox: PROJECT (repeatable)")
	f.StringArrayVar(&fl.external, "exec", fl.external, "an external application: NAME=/absolute/path (repeatable)")
	f.StringSliceVar(&fl.exclude, "exclude", fl.exclude, "resource keywords this machine cannot serve, e.g. bw:fast (repeatable)")
	f.IntVar(&fl.slots, "slots", fl.slots, "jobs run in parallel")
	f.IntVar(&fl.claimMany, "claim-many", fl.claimMany, "most jobs of one place claimed at once, one request per node (1 to 32; 0: as many as the slots run within half a job's T_finish at the run time seen here)")
	f.StringVar(&fl.memory, "memory", fl.memory, "memory offered to jobs, e.g. 2GiB (default: the machine's)")
	f.StringVar(&fl.blobCache, "blob-cache", fl.blobCache, "bytes of fetched blobs (inputs, modules) kept in DATA/blob-cache, e.g. 4GiB (default 4GiB)")
	f.StringVar(&fl.bandwidth, "bandwidth", fl.bandwidth, "this machine's network bandwidth, e.g. 56kbit, 20Mbit, 1Gbit: rules out jobs needing more (bw:medium >= 1 Mbit/s, bw:high >= 10 Mbit/s); default unknown")
	f.StringVar(&fl.work, "work", fl.work, "work directories' root (default DATA/work)")
	f.StringVar(&fl.httpAddr, "http", fl.httpAddr, "address of the local HTTP API (/status, /metrics, /api/...), e.g. 127.0.0.1:8050; off when empty; off loopback it needs DATA/http.token")
	f.IntVar(&fl.maxJobs, "max-jobs", fl.maxJobs, "stop after this many jobs (0: run until interrupted)")
	f.DurationVar(&fl.backoffMax, "backoff-max", fl.backoffMax, "longest wait when a project has no work or the network fails")
	f.StringVar(&fl.logLevel, "log-level", fl.logLevel, "log level: debug, info, warn, error")
	f.StringVar(&fl.logFormat, "log-format", fl.logFormat, "log format: text or json")
}

// runClient runs the worker the flags describe until it is interrupted
// or has run --max-jobs jobs, and prints what it did.
func runClient(cmd *cobra.Command, fl clientRunFlags, setup clientSetup) error {
	logger, err := newLogger(cmd.ErrOrStderr(), fl.logLevel, fl.logFormat)
	if err != nil {
		return err
	}
	boot, err := bootstrapPeers(fl.bootstrap, fl.bootstrapFile)
	if err != nil {
		return err
	}
	id, err := keystore.Load(fl.data, certs.RoleClient, time.Now())
	if err != nil {
		return err
	}
	lock, err := keystore.LockDir(fl.data)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	run, err := newClientRunner(fl, setup)
	if err != nil {
		return err
	}
	defer run.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := agent.Open(agent.Config{Identity: id, Logger: logger})
	if err != nil {
		return err
	}
	defer a.Close()
	// A volunteer's machine may start before its network: join
	// until stopped, unless the nodes refuse this client itself.
	if err := overlay.RetryJoin(ctx, logger, time.Second, max(fl.backoffMax, time.Second), -1, func(ctx context.Context) error {
		return a.Join(ctx, boot)
	}); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while joining
		}
		return err
	}
	cfg := fl.clientConfig(setup, a, run, logger)
	if cfg.Blobs, err = openBlobStore(fl.data, setup.blobCache, a); err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	if fl.httpAddr != "" {
		token, err := apiToken(cmd.ErrOrStderr(), fl.data, fl.httpAddr)
		if err != nil {
			return err
		}
		srv, err := serveHTTP(fl.httpAddr, web.Guard(c.Handler(version), token))
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	logger.Info("client started", "projects", len(setup.projects), "slots", fl.slots)
	if err := c.Run(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	st := c.Status()
	fmt.Fprintf(cmd.OutOrStdout(), "%d jobs done, %d failed\n", st.Done, st.Failed)
	return nil
}

// newClientRunner makes the runner of the client's jobs: applications
// launched as 'up app exec', in work directories under --work; the
// modules of the --allow-wasm projects in the sandbox, their compiled
// code kept in DATA/wasm-cache.
func newClientRunner(fl clientRunFlags, setup clientSetup) (*runner.Runner, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the up binary for the launcher: %w", err)
	}
	work := fl.work
	if work == "" {
		work = filepath.Join(fl.data, "work")
	}
	return runner.New(runner.Config{Launcher: []string{self, "app", "exec"}, WorkRoot: work,
		Allow: setup.allow, External: setup.external,
		AllowWASM: setup.allowWASM, Sandbox: sandbox.Config{CacheDir: filepath.Join(fl.data, "wasm-cache")}})
}

// defaultBlobCache is --blob-cache's default, in bytes.
const defaultBlobCache = 4 << 30

// openBlobStore opens DATA/blob-cache, bounded to max bytes, and the store
// that fetches the jobs' blobs into it through a.
func openBlobStore(data string, max int64, a *agent.Agent) (*blobclient.Store, error) {
	c, err := cache.Open(filepath.Join(data, "blob-cache"), max)
	if err != nil {
		return nil, err
	}
	return blobclient.NewStore(a, c)
}

// clientConfig is the configuration of the client the flags describe,
// joined through a and running jobs with run.
func (f *clientRunFlags) clientConfig(setup clientSetup, a *agent.Agent, run *runner.Runner, logger *slog.Logger) client.Config {
	return client.Config{Agent: a, Projects: setup.projects, Runner: run, Slots: f.slots, ClaimMany: f.claimMany,
		Attributes: client.Attributes{Memory: setup.memory, Bandwidth: setup.bw, Exclude: f.exclude},
		InputDir:   filepath.Join(f.data, "inputs"), MaxJobs: f.maxJobs, Logger: logger,
		ControlFile: filepath.Join(f.data, controlFile), FeasibleFile: filepath.Join(f.data, feasibleFile),
		BackoffMin: min(time.Second, f.backoffMax), BackoffMax: f.backoffMax}
}

// controlFile is where a client keeps its controls changed at run time
// (pause, attach, detach), in its data directory.
const controlFile = "controls.json"

// feasibleFile is where a client keeps what it learnt of its on and off
// periods and its applications' run times, in its data directory.
const feasibleFile = "feasible.json"

// apiToken is the token the local API at addr requires: none on a
// loopback address, else DATA/http.token's (made if missing), whose path
// it prints to w.
func apiToken(w io.Writer, data, addr string) (string, error) {
	if web.Loopback(addr) {
		return "", nil
	}
	path := filepath.Join(data, web.TokenFile)
	token, err := web.LoadToken(path)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(w, "HTTP API on %s requires the token in %s (--token or $%s for 'up client ...'; ?token=... once in a browser)\n", addr, path, tokenEnv)
	return token, nil
}

// serveHTTP serves h on addr until the returned server is closed.
func serveHTTP(addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("HTTP API on %s: %w", addr, err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: h}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

func newClientStatusCmd() *cobra.Command {
	var fl clientAPIFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print a running client's status: jobs in progress, done, debts",
		Example: `  up client status --http 127.0.0.1:8050
  up client status --http http://127.0.0.1:8050 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := fl.parse(os.Getenv)
			if err != nil {
				return err
			}
			var st client.Status
			if err := fetchStatusToken(fl.addr, "client", api.token, &st); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			return printClientStatus(cmd.OutOrStdout(), st)
		},
	}
	bindClientAPIFlags(cmd.Flags(), &fl)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// parseBandwidth parses a bandwidth in bit/s: a number with an optional
// kbit, Mbit or Gbit suffix.
func parseBandwidth(v string) (int64, error) {
	mult := int64(1)
	num := strings.TrimSpace(v)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kbit", 1_000}, {"Mbit", 1_000_000}, {"Gbit", 1_000_000_000}} {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	x, err := strconv.ParseFloat(num, 64)
	if err != nil || x <= 0 || x*float64(mult) > 1e13 {
		return 0, fmt.Errorf("want a positive number of bit/s with an optional kbit, Mbit or Gbit suffix")
	}
	return int64(x * float64(mult)), nil
}
