package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/client/feasible"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/runner"
)

// timed is inProcess reporting that each run took wall; before, when
// set, is called as a run starts.
type timed struct {
	inProcess
	wall   time.Duration
	before func(ctx context.Context) error
}

func (e *timed) Run(ctx context.Context, t runner.Task) (runner.Outcome, error) {
	if e.before != nil {
		if err := e.before(ctx); err != nil {
			return runner.Outcome{}, err
		}
	}
	out, err := e.inProcess.Run(ctx, t)
	out.Wall = e.wall
	return out, err
}

// feasibleFile writes a feasible file saying echo-args of lhc ran for
// run, and returns its path.
func feasibleFile(t *testing.T, run time.Duration) string {
	t.Helper()
	e := feasible.New(feasible.Config{}, feasible.State{})
	e.Finished("lhc/echo-args", 0, run)
	b, err := json.Marshal(e.State())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "feasible.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInfeasibleIsNotClaimed: a job of an application that ran here for
// 10 h, with T_finish 1 h, is skipped before any claim for "cannot
// finish before the deadline"; the negative control, a client that
// learnt a run of 10 min, claims and runs it.
func TestInfeasibleIsNotClaimed(t *testing.T) {
	cn := startCaseNet(t, 221)
	key := cn.submit(t, "echo-args", []string{"x"}, time.Hour)
	for _, tc := range []struct {
		name, worker string
		run          time.Duration
		ran          bool
	}{
		{"learnt 10 h", "slow", 10 * time.Hour, false},
		{"learnt 10 min", "quick", 10 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := cn.worker(t, tc.worker, nil, quick(&inProcess{}, ""), func(cfg *client.Config) {
				cfg.FeasibleFile = feasibleFile(t, tc.run)
			})
			ran, err := c.RunOne(context.Background(), "lhc")
			if ran != tc.ran {
				t.Fatalf("ran %v, err %v; want ran %v", ran, err, tc.ran)
			}
			if tc.ran {
				return
			}
			if !errors.Is(err, indexclient.ErrNoJob) {
				t.Fatalf("err %v, want the job skipped and nothing else found", err)
			}
			if st := cn.state(key); st.Phase != job.Ready {
				t.Fatalf("infeasible job left %s", st.Phase)
			}
			j := c.Explain().Projects[0].Jobs[0]
			if j.Decision != "skipped" || j.Reason != "cannot finish before the deadline" || !strings.Contains(j.Detail, "T_finish 1h0m0s") {
				t.Fatalf("explain %+v; want skipped, cannot finish before the deadline", j)
			}
		})
	}
}

// TestRunTimesKept: a run's time and the client's on period are written
// to the feasible file, and a client started on it knows them.
func TestRunTimesKept(t *testing.T) {
	cn := startCaseNet(t, 222)
	cn.submit(t, "echo-args", []string{"x"}, time.Hour)
	path := filepath.Join(t.TempDir(), "feasible.json")
	_, c := cn.worker(t, "w", nil, quick(&timed{wall: 3 * time.Minute}, ""), func(cfg *client.Config) {
		cfg.FeasibleFile, cfg.MaxJobs = path, 1
	})
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st feasible.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Periods) != 1 || !st.OnSince.IsZero() {
		t.Errorf("periods %+v, on since %v; want one closed", st.Periods, st.OnSince)
	}
	if run, known := feasible.New(feasible.Config{}, st).RunTime("lhc/echo-args", 0); !known || run != 3*time.Minute {
		t.Errorf("run time %v (known %v), want 3m", run, known)
	}
}

// TestLateRunReleased: a job claimed and then held up (the machine
// slept 2 h: the clock jumps as it starts) can no longer end within its
// T_finish of 1 h: its run is stopped and the job given back at once
// for "cannot finish before the deadline", not counted failed.
func TestLateRunReleased(t *testing.T) {
	defer client.DeadlineEvery.Store(client.DeadlineEvery.Load())
	client.DeadlineEvery.Store(int64(10 * time.Millisecond))
	cn := startCaseNet(t, 223)
	cn.submit(t, "echo-args", []string{"x"}, time.Hour)
	slept := &timed{before: func(ctx context.Context) error {
		cn.clock.Advance(2 * time.Hour)
		<-ctx.Done() // the watch stops it
		return context.Cause(ctx)
	}}
	_, c := cn.worker(t, "w", nil, quick(slept, ""), func(cfg *client.Config) {
		cfg.FeasibleFile = feasibleFile(t, 10*time.Minute)
	})
	ran, err := c.RunOne(context.Background(), "lhc")
	if !ran || !errors.Is(err, client.ErrDeadline) {
		t.Fatalf("ran %v, err %v; want the claimed job given back with ErrDeadline", ran, err)
	}
	h := c.History()
	if len(h.Jobs) != 1 || h.Jobs[0].Outcome != "released" || h.Jobs[0].Reason != "cannot finish before the deadline" {
		t.Fatalf("history %+v; want released, cannot finish before the deadline", h.Jobs)
	}
	if st := c.Status(); st.Released != 1 || st.Failed != 0 {
		t.Fatalf("status released %d, failed %d; want 1, 0", st.Released, st.Failed)
	}
}
