package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/browser"
	"github.com/up-pool/up/web"
)

// pagesWait bounds what a page must show after a few polls.
const pagesWait = 45 * time.Second

// pagesRun is a small network for the pages: nodes (node 0 with its
// HTTP API), a project with its ledger and page, a volunteer client with
// its API, jobs that take a moment each.
type pagesRun struct {
	t      *testing.T
	ctx    context.Context
	tn     *testnet.Network
	p      *project.Project
	ledger *project.Ledger
	c      *client.Client
	client string // the client's base URL
	proj   string // the project page's base URL
	submit int    // units submitted so far
}

func startPagesRun(t *testing.T, ctx context.Context) *pagesRun {
	dir := t.TempDir()
	tn, err := testnet.Start(ctx, testnet.Options{Nodes: 5, Dir: dir, Seed: 47, PoolLoops: true,
		Configure: func(i int, cfg *node.Config) {
			if i == 0 {
				cfg.HTTPAddr = "127.0.0.1:0"
				cfg.SeriesStep = 250 * time.Millisecond
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tn.Close() })
	r := &pagesRun{t: t, ctx: ctx, tn: tn}
	if r.p, err = tn.NewProject(ctx, "pages"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.p.Agent().Close() })
	dbPath := filepath.Join(dir, "ledger.db")
	if r.ledger, err = project.OpenLedger(dbPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ledger.Close() })
	reader, err := project.OpenLedgerReader(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reader.Close() })
	api := newProjectAPI(reader, "pages", time.Minute)
	api.describer = func(ctx context.Context, id string) (*project.Description, error) {
		return r.p.Describe(ctx, r.ledger, id)
	}
	r.proj = serveTest(t, api.handler(""))
	r.startClient(filepath.Join(dir, "volunteer"))
	return r
}

// serveTest serves h on 127.0.0.1 for the test and returns its base URL.
func serveTest(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (r *pagesRun) startClient(dir string) {
	t := r.t
	a, err := r.tn.NewAgent(r.ctx, "client", "volunteer1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	run, err := runner.New(runner.Config{Launcher: []string{os.Args[0], "app", "exec"}, Env: []string{"UP_TEST_MAIN=1"},
		WorkRoot: filepath.Join(dir, "work"), Allow: map[string][]string{"pages": {"hashchain"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.c, err = client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "pages", Share: 1}}, Runner: run, Slots: 1,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 300 * time.Millisecond, Seed: 5,
		ControlFile: filepath.Join(dir, "controls.json"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = r.c.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	r.client = serveTest(t, web.Guard(r.c.Handler("test"), ""))
}

// submitUnits submits n more units of one copy each: hashchain jobs that
// take a moment.
func (r *pagesRun) submitUnits(n int) {
	units := make([]project.Unit, n)
	for i := range units {
		units[i] = project.Unit{App: "hashchain", Args: []string{"200000", strconv.Itoa(r.submit + i)}, Keywords: []string{"pages"}, TFinish: time.Hour}
	}
	r.submit += n
	digest := sha256.Sum256([]byte(fmt.Sprint("pages", r.submit)))
	rep, err := r.p.SubmitUnits(r.ctx, r.ledger, units, 1, digest[:], "pages-test", nil)
	if err != nil || len(rep.Errors) > 0 {
		r.t.Fatalf("submit: %v %v", err, rep.Errors)
	}
}

// harvestLoop harvests every 300 ms until ctx ends, as a project's
// `harvest --follow` would.
func (r *pagesRun) harvestLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if _, err := r.p.Harvest(ctx, r.ledger, project.HarvestOptions{}, nil); err != nil && ctx.Err() == nil {
			r.t.Logf("harvest: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// atLeast is a WaitText predicate: the text is a number ≥ n.
func atLeast(n int) func(string) bool {
	return func(s string) bool {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		return err == nil && v >= n
	}
}

func number(t *testing.T, s string) int {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

// TestPagesInBrowser drives headless Chromium through the three roles'
// pages on one small network: the client's page shows jobs done rising
// as they complete, its Pause button stops the client taking jobs (the
// count stays while the project has work) and Resume starts it again;
// the project's page shows results and credit arriving from the
// harvests and describes a unit; the node's page shows the requests it
// serves. No page logs an error. Screenshots go to UP_SCREENSHOTS.
func TestPagesInBrowser(t *testing.T) {
	b := browser.Start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("console errors: %q", b.Errors())
			b.Snapshot("failed")
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := startPagesRun(t, ctx)
	hctx, stopHarvest := context.WithCancel(ctx)
	defer stopHarvest()
	go r.harvestLoop(hctx)
	r.submitUnits(12)

	// The client's page: live figures rise as jobs complete (more are
	// submitted once the page shows some: the first may all be done by
	// the time it loads).
	b.Open(r.client + "/")
	first := number(t, b.WaitText("#c-done", atLeast(1), pagesWait))
	r.submitUnits(6)
	b.WaitText("#c-done", atLeast(first+1), pagesWait)
	b.WaitText("#c-history", func(s string) bool { return strings.Contains(s, "hashchain") && strings.Contains(s, "done") }, pagesWait)

	// Pause: the client takes no new job while the project has work.
	b.Click("#c-pause")
	b.WaitText("#c-state", func(s string) bool { return s == "paused" }, pagesWait)
	if !r.c.Status().Paused {
		t.Fatal("the page says paused, the client is not")
	}
	r.submitUnits(6)
	b.WaitText("#c-running", func(s string) bool { return strings.Contains(s, "no job running") }, pagesWait)
	held := number(t, b.Text("#c-done"))
	won := r.c.Status().Claims.Won
	// Four polls of the page (2 s apart) while paused: nothing taken.
	for i := 0; i < 4; i++ {
		before := b.Text("#up-live")
		b.WaitText("#up-live", func(s string) bool { return s != before }, pagesWait)
	}
	if got := r.c.Status().Claims.Won; got != won {
		t.Fatalf("paused client won %d claims", got-won)
	}
	if got := number(t, b.Text("#c-done")); got != held {
		t.Fatalf("paused client's done went from %d to %d", held, got)
	}
	b.Snapshot("client-page-paused")
	b.Click("#c-resume")
	b.WaitText("#c-state", func(s string) bool { return s != "paused" }, pagesWait)
	b.WaitText("#c-done", atLeast(held+1), pagesWait)
	b.Snapshot("client-page")
	noPageErrors(t, b)

	// The project's page: results and credit from the harvests, and a
	// unit described.
	b.Open(r.proj + "/")
	res := number(t, b.WaitText("#p-results", atLeast(1), pagesWait))
	r.submitUnits(6)
	b.WaitText("#p-results", atLeast(res+1), pagesWait)
	b.WaitText("#p-credit", func(s string) bool { return strings.Contains(s, "volunteer1") }, pagesWait)
	b.WaitCount("#p-results-table tbody tr", 1, pagesWait)
	b.SetValue("#p-describe-id", "1")
	b.Click("#p-describe-form button")
	b.WaitCount("#p-describe li", 1, pagesWait)
	b.Snapshot("project-page")
	noPageErrors(t, b)

	// The node's page: the requests it serves, by protocol.
	b.Open("http://" + r.tn.Node(0).HTTPAddr() + "/")
	b.WaitText("#n-rpc", func(s string) bool { return strings.Contains(s, "/up/") }, pagesWait)
	b.Snapshot("node-page")
	noPageErrors(t, b)
}

func noPageErrors(t *testing.T, b *browser.Browser) {
	t.Helper()
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
