package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/web"
)

// defaultProjectHTTP is where 'up project serve' listens by default:
// this machine only, so no token is needed.
const defaultProjectHTTP = "127.0.0.1:8060"

var (
	//go:embed projectpage/page.html
	projectPageBody []byte
	//go:embed projectpage/page.js
	projectPageScript []byte
)

// projectServeFlags are the flags of 'up project serve'.
type projectServeFlags struct {
	data          string
	http          string
	stuckAfter    time.Duration
	bootstrap     []string
	bootstrapFile string
}

// projectServeSetup is what the flags of 'up project serve' ask for.
type projectServeSetup struct {
	ledger    string // path of the ledger
	addr      string // host:port to listen on
	tokenFile string // DATA/http.token; "" when bound to loopback only (no token)
	// stuckAfter is how long a unit goes without a canonical result
	// before the page lists it as stuck.
	stuckAfter time.Duration
	// describe, when set (--bootstrap given), joins the overlay to
	// answer /api/describe; nil: the page cannot describe.
	describe *projectConn
}

// parse checks the flags: --data given, --http a host:port, --stuck-after
// positive; a non-loopback address needs the token of DATA/http.token.
func (f projectServeFlags) parse() (projectServeSetup, error) {
	if err := required("data", f.data); err != nil {
		return projectServeSetup{}, err
	}
	host, port, err := net.SplitHostPort(f.http)
	if err != nil {
		return projectServeSetup{}, usageError{fmt.Errorf("--http %q: want host:port, e.g. %s: %w", f.http, defaultProjectHTTP, err)}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return projectServeSetup{}, usageError{fmt.Errorf("--http %q: port %q is not a number from 0 to 65535", f.http, port)}
	}
	if host != "" && host != "localhost" && net.ParseIP(host) == nil {
		return projectServeSetup{}, usageError{fmt.Errorf("--http %q: the host must be an IP address or localhost", f.http)}
	}
	if f.stuckAfter <= 0 {
		return projectServeSetup{}, usageError{fmt.Errorf("--stuck-after %s must be positive", f.stuckAfter)}
	}
	s := projectServeSetup{ledger: filepath.Join(f.data, "ledger.db"), addr: f.http, stuckAfter: f.stuckAfter}
	if !web.Loopback(f.http) {
		s.tokenFile = filepath.Join(f.data, web.TokenFile)
	}
	if len(f.bootstrap) > 0 || f.bootstrapFile != "" {
		if _, err := parseBootstrap(f.bootstrap); err != nil {
			return projectServeSetup{}, err
		}
		s.describe = &projectConn{data: f.data, bootstrap: f.bootstrap, bootstrapFile: f.bootstrapFile,
			quiet: true, logLevel: "error", logFormat: "text"}
	}
	return s, nil
}

func newProjectServeCmd() *cobra.Command {
	f := projectServeFlags{http: defaultProjectHTTP, stuckAfter: project.StuckAfter}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the project's web page: progress, throughput, latency, validation, credit, stuck units, results",
		Long: `Serve reads the ledger and serves the project's page and its JSON API
(/api/summary, /api/series, /api/latency, /api/validation, /api/credit,
/api/stuck, /api/results, /api/results/JOB to download an output,
/api/describe?id=JOB). It only reads the ledger (SQLite in WAL mode), so
'up project harvest' and 'submit' keep running beside it, neither waiting
for the other, and it needs no network. The page updates itself every
few seconds.

With --bootstrap, the page also describes a job or unit (why it is not
running, as 'up project describe'): each describe joins the overlay for
its few seconds, as a project command would, so it waits while another
project command runs (the data directory is locked) and that command
waits for it.

--http is 127.0.0.1:8060 by default: this machine only. Bound to any
other address, every request needs the token of DATA/http.token (created
on first use, printed at start): open the page as /?token=TOKEN once, or
send "Authorization: Bearer TOKEN".`,
		Example: `  up project serve --data lhc                       # then open http://127.0.0.1:8060/
  up project serve --data lhc --http 0.0.0.0:8060   # from other machines, with the token it prints
  up project serve --data lhc --bootstrap /ip4/127.0.0.1/tcp/4001/p2p/12D3Koo...   # and describe stuck units`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.parse()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serveProject(ctx, s, f.data, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.data, "data", "", "project data directory (required)")
	fl.StringVar(&f.http, "http", f.http, "address to serve the page on, host:port; beyond loopback a token is required (DATA/http.token)")
	fl.DurationVar(&f.stuckAfter, "stuck-after", f.stuckAfter, "list a unit as stuck when it has no canonical result this long after its first job was prepared")
	fl.StringSliceVar(&f.bootstrap, "bootstrap", nil, bootstrapHelp+"; enables describe on the page")
	fl.StringVar(&f.bootstrapFile, "bootstrap-file", "", bootstrapFileHelp)
	return cmd
}

// serveProject serves the page of the ledger s names until ctx ends.
func serveProject(ctx context.Context, s projectServeSetup, data string, out io.Writer) error {
	if _, err := os.Stat(s.ledger); err != nil {
		return fmt.Errorf("no ledger at %s: submit jobs first", s.ledger)
	}
	var token string
	if s.tokenFile != "" {
		var err error
		if token, err = web.LoadToken(s.tokenFile); err != nil {
			return err
		}
	}
	l, err := project.OpenLedgerReader(s.ledger)
	if err != nil {
		return err
	}
	defer l.Close()
	api := newProjectAPI(l, projectName(data), s.stuckAfter)
	if s.describe != nil {
		api.describer = connDescriber(s.describe)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("HTTP API on %s: %w", s.addr, err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: api.handler(token)}
	fmt.Fprintf(out, "project %s: serving http://%s/ (ledger %s; Ctrl-C stops)\n", api.name, ln.Addr(), s.ledger)
	if token != "" {
		fmt.Fprintf(out, "token (from %s): %s\nopen http://%s/?token=%s\n", s.tokenFile, token, ln.Addr(), token)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("HTTP API on %s: %w", s.addr, err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shut)
}

// projectName is the name on the project's certificate in data, else
// the directory's name.
func projectName(data string) string {
	b, err := os.ReadFile(keystore.Paths{Dir: data, Role: certs.RoleProject}.Cert())
	if err == nil {
		if c, err := certs.DecodeCertPEM(b); err == nil && c.Subject.CommonName != "" {
			return c.Subject.CommonName
		}
	}
	return filepath.Base(filepath.Clean(data))
}

// connDescriber describes through c: it opens the project (data
// directory lock, overlay), describes and closes, one describe at a time.
func connDescriber(c *projectConn) describer {
	var mu sync.Mutex
	return func(ctx context.Context, id string) (*project.Description, error) {
		mu.Lock()
		defer mu.Unlock()
		p, l, done, err := c.open(ctx, io.Discard)
		if err != nil {
			return nil, err
		}
		defer done()
		return p.Describe(ctx, l, id)
	}
}
