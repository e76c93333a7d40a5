package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/wire"
)

// gated is an Executor like inProcess whose runs wait for release when
// hold is set.
type gated struct {
	inProcess
	hold    chan struct{}
	running chan struct{} // receives one value per run started, when set
}

func (g *gated) Run(ctx context.Context, t runner.Task) (runner.Outcome, error) {
	if g.running != nil {
		g.running <- struct{}{}
	}
	if g.hold != nil {
		select {
		case <-g.hold:
		case <-ctx.Done():
			return runner.Outcome{}, ctx.Err()
		}
	}
	return g.inProcess.Run(ctx, t)
}

// quick makes a worker run through exec, unpaced, backing off briefly.
func quick(exec client.Executor, controlFile string) func(*client.Config) {
	return func(cfg *client.Config) {
		cfg.Runner, cfg.Pace, cfg.ControlFile = exec, -1, controlFile
		cfg.BackoffMin, cfg.BackoffMax = 10*time.Millisecond, 100*time.Millisecond
	}
}

// await fails the test unless cond holds within a minute, polling.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// holds checks that cond stays true for d (nothing can be awaited when
// what is checked is that nothing happens).
func holds(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(end) {
		if !cond() {
			t.Fatalf("%s", what)
		}
		<-tick.C
	}
}

// running runs c until the test ends.
func running(t *testing.T, c *client.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// TestPauseStopsClaiming: a running client claims jobs (the control);
// paused, it claims none of the jobs submitted since, whether its workers
// or a cycle asked directly look for them, and shows paused; resumed, it
// claims and runs them at once.
func TestPauseStopsClaiming(t *testing.T) {
	cn := startCaseNet(t, 81)
	_, c := cn.worker(t, "pausable", nil, quick(&inProcess{}, ""))
	running(t, c)
	cn.submit(t, "echo-args", []string{"0"}, time.Hour)
	await(t, "the job done before the pause", func() bool { return c.Status().Done == 1 })

	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	won := c.Status().Claims.Won
	for _, a := range []string{"1", "2", "3"} {
		cn.submit(t, "echo-args", []string{a}, time.Hour)
	}
	ran, err := c.RunOne(context.Background(), "lhc")
	if ran || err == nil || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("a cycle while paused: ran %v, err %v; want no claim, refused as paused", ran, err)
	}
	holds(t, "a paused client claimed a job", time.Second, func() bool { return c.Status().Claims.Won == won })
	if st := c.Status(); !st.Paused || st.Done != 1 {
		t.Fatalf("paused status %+v", st)
	}

	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	await(t, "the three jobs done after Resume", func() bool { return c.Status().Done == 4 })
	if st := c.Status(); st.Paused {
		t.Fatal("resumed client shows paused")
	}
}

// TestAttachDetachKept: a project detached at run time has its jobs left
// alone, stays detached after a restart although Config.Projects names
// it, and once attached again its jobs run; a project attached at run
// time, and the pause, are kept across a restart too.
func TestAttachDetachKept(t *testing.T) {
	cn := startCaseNet(t, 82)
	file := filepath.Join(t.TempDir(), "controls.json")
	_, c := cn.worker(t, "fickle", nil, quick(&inProcess{}, file))
	if err := c.Detach("lhc"); err != nil {
		t.Fatal(err)
	}
	if err := c.Detach("nope"); err == nil {
		t.Fatal("detached a project never attached")
	}
	if err := c.Attach(client.Project{Name: "cms", Share: 25}); err != nil {
		t.Fatal(err)
	}
	if err := c.Attach(client.Project{Name: "bad name", Share: 1}); err == nil {
		t.Fatal("attached a project named with a space")
	}
	running(t, c)
	cn.submit(t, "echo-args", []string{"0"}, time.Hour)
	holds(t, "a detached project's job was claimed", time.Second, func() bool { return c.Status().Claims.Won == 0 })

	// Restarted with the same configuration (lhc attached by it).
	_, c2 := cn.worker(t, "fickle2", nil, quick(&inProcess{}, file))
	want := []client.ProjectControl{{Name: "cms", Share: 25, Attached: true}, {Name: "lhc", Share: 1}}
	if got := c2.Controls(); got.Paused || !equalControls(got.Projects, want) {
		t.Fatalf("restarted controls %+v, want %+v", got, want)
	}
	if err := c2.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Attach(client.Project{Name: "lhc", Share: 3}); err != nil {
		t.Fatal(err)
	}
	_, c3 := cn.worker(t, "fickle3", nil, quick(&inProcess{}, file))
	want[1] = client.ProjectControl{Name: "lhc", Share: 3, Attached: true}
	if got := c3.Controls(); !got.Paused || !equalControls(got.Projects, want) {
		t.Fatalf("restarted controls %+v, want paused and %+v", got, want)
	}
	if err := c3.Resume(); err != nil {
		t.Fatal(err)
	}
	running(t, c3)
	await(t, "the job run once lhc is attached again", func() bool { return c3.Status().Done == 1 })
	if st := c3.Status(); len(st.Projects) != 2 || st.Projects[1].Share != 3 || !st.Projects[1].Attached {
		t.Fatalf("status projects %+v", st.Projects)
	}
}

func equalControls(a, b []client.ProjectControl) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDetachReleasesHeld: a job claimed and still fetching its input
// when its project is detached is released (not counted failed), a
// running one runs on to its result; the history has both, and the
// running one showed its limits.
func TestDetachReleasesHeld(t *testing.T) {
	cn := startCaseNet(t, 83)
	exec := &gated{hold: make(chan struct{}), running: make(chan struct{}, 1)}
	_, c := cn.worker(t, "holder", nil, quick(exec, ""))
	asked := make(chan struct{}, 1)
	var first atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first.CompareAndSwap(false, true) {
			asked <- struct{}{}
			<-r.Context().Done() // never answers: the client gives up
			return
		}
		http.Error(w, "gone", http.StatusNotFound) // the released job, claimed again, fails at once
	}))
	defer srv.Close()
	cn.submitInput(t, srv.URL+"/in")
	cycle := func() chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.RunOne(context.Background(), "lhc")
			done <- err
		}()
		return done
	}
	done := cycle()
	<-asked
	if err := c.Detach("lhc"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("the job fetching its input ran")
	}
	if st := c.Status(); st.Released != 1 || st.Failed != 0 {
		t.Fatalf("released %d, failed %d; want the job released, not failed", st.Released, st.Failed)
	}
	if h := c.History(); len(h.Jobs) != 1 || h.Jobs[0].Outcome != "released" || h.Jobs[0].Reason != wire.SkipStopping.String() {
		t.Fatalf("history %+v; want the job released for the detach", h)
	}

	if err := c.Attach(client.Project{Name: "lhc", Share: 1}); err != nil {
		t.Fatal(err)
	}
	cn.submit(t, "echo-args", []string{"0"}, time.Hour)
	// The released job is open again too: a cycle may take it (its input
	// now refused) before the new one.
	for running := false; !running; {
		done = cycle()
		select {
		case <-exec.running:
			running = true
		case <-done:
		}
	}
	st := c.Status()
	if len(st.Running) != 1 || st.Running[0].Limits == nil || st.Running[0].Limits.Wall != (54*time.Minute).Seconds() {
		t.Fatalf("running %+v; want one job with its limits (wall 90 %% of an hour)", st.Running)
	}
	if err := c.Detach("lhc"); err != nil {
		t.Fatal(err)
	}
	close(exec.hold)
	if err := <-done; err != nil {
		t.Fatalf("the running job: %v", err)
	}
	h := c.History()
	if len(h.Jobs) < 2 || h.Jobs[0].Outcome != "done" || h.Jobs[0].App != "echo-args" || h.Jobs[0].Wall <= 0 {
		t.Fatalf("history %+v; want the running job done", h)
	}
}

// submitInput submits a job of echo-args with one input fetched from url.
func (cn *caseNet) submitInput(t *testing.T, url string) {
	t.Helper()
	spec, err := cn.proj.NewSpec("echo-args", []string{"in"}, []string{"lhc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	spec.Inputs = []job.Input{{URL: url, SHA256: make([]byte, 32), Size: 1}}
	prep, err := cn.proj.Sign(spec)
	if err != nil {
		t.Fatal(err)
	}
	if r := cn.proj.Submit(context.Background(), []*project.Prepared{prep}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	cn.net.FlushAll(context.Background())
}

// TestExplainNamesSkip: the explain log shows the query, a job whose
// application the client does not allow as skipped for "application not
// allowed" with its application, a job it ran as done, and a summary
// line counting both.
func TestExplainNamesSkip(t *testing.T) {
	cn := startCaseNet(t, 84)
	_, c := cn.worker(t, "picky", nil, quick(&inProcess{}, ""))
	burn := cn.submit(t, "burn", []string{"100"}, time.Hour)
	_, _ = c.RunOne(context.Background(), "lhc")
	cn.submit(t, "echo-args", []string{"x"}, time.Hour)
	if ran, err := c.RunOne(context.Background(), "lhc"); !ran || err != nil {
		t.Fatalf("ran %v, err %v", ran, err)
	}
	ex := c.Explain()
	if len(ex.Projects) != 1 || ex.Projects[0].Name != "lhc" || !ex.Projects[0].Attached {
		t.Fatalf("explain projects %+v", ex.Projects)
	}
	p := ex.Projects[0]
	if len(p.Queries) == 0 || p.Queries[0].Query == "" {
		t.Fatalf("queries %+v", p.Queries)
	}
	decided := map[string]client.JobNote{}
	for _, j := range p.Jobs {
		decided[j.App] = j
	}
	if j := decided["burn"]; j.Decision != "skipped" || j.Reason != "application not allowed" || !strings.Contains(j.Detail, "burn") {
		t.Errorf("the burn job %x: %+v; want skipped, application not allowed", burn, j)
	}
	if j := decided["echo-args"]; j.Decision != "done" {
		t.Errorf("the echo-args job: %+v; want done", j)
	}
	t.Logf("summary: %s", p.Summary)
	for _, want := range []string{"found 2 jobs", "took 1", "skipped 1: application not allowed (app burn) ×1"} {
		if !strings.Contains(p.Summary, want) {
			t.Errorf("summary %q lacks %q", p.Summary, want)
		}
	}
	if h := c.History(); len(h.Jobs) != 1 || h.Jobs[0].Outcome != "done" || h.Jobs[0].Project != "lhc" {
		t.Errorf("history %+v", h)
	}
}
