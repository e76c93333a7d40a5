package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/runner"
)

// inProcess is an Executor that runs nothing: it answers every task with
// its arguments joined, and records the tasks it was given.
type inProcess struct {
	mu    sync.Mutex
	tasks []runner.Task
}

func (e *inProcess) Allowed(project, app string) bool { return project == "lhc" && app == "echo-args" }

func (e *inProcess) AllowedWASM(string) bool { return false }

func (e *inProcess) Run(_ context.Context, t runner.Task) (runner.Outcome, error) {
	e.mu.Lock()
	e.tasks = append(e.tasks, t)
	e.mu.Unlock()
	out := []byte{}
	for _, a := range t.Args {
		out = append(out, a...)
	}
	return runner.Outcome{Output: out, Wall: time.Millisecond}, nil
}

// TestExecutorSeam: a client whose Runner is another Executor runs the
// job through it (the bench's in-process executor), seals its output as
// the result, counts its query and times its claim.
func TestExecutorSeam(t *testing.T) {
	cn := startCaseNet(t, 64)
	key := cn.submit(t, "echo-args", []string{"a", "b"}, time.Hour)
	exec := &inProcess{}
	var claims []time.Duration
	_, c := cn.worker(t, "inproc", nil, func(cfg *client.Config) {
		cfg.Runner = exec
		cfg.Pace = -1
		cfg.OnClaim = func(d time.Duration) { claims = append(claims, d) }
	})
	if ran, err := c.RunOne(context.Background(), "lhc"); !ran || err != nil {
		t.Fatalf("ran %v, err %v", ran, err)
	}
	if len(exec.tasks) != 1 || exec.tasks[0].App != "echo-args" || exec.tasks[0].Project != "lhc" || exec.tasks[0].Wall <= 0 {
		t.Fatalf("executor given %+v", exec.tasks)
	}
	if in := cn.open(t, key); string(in.Output) != "ab" || in.ExitCode != 0 {
		t.Fatalf("result output %q, exit %d", in.Output, in.ExitCode)
	}
	st := c.Status()
	if st.Done != 1 || st.Queries["found"] != 1 || len(claims) != 1 {
		t.Fatalf("status %+v, %d claims timed", st, len(claims))
	}
}
