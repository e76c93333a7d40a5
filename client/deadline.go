package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/up-pool/up/client/feasible"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
)

// ErrDeadline reports a job this client cannot finish before its claim
// lapses (its T_finish, from the claim, on the client's clock): skipped
// before its claim, or given back early so it is reissued at once rather
// than after T_finish (package client/feasible decides).
var ErrDeadline = errors.New("cannot finish before the deadline")

// deadlineEvery is how often a running job is checked against its
// T_finish (wall-clock time, ns): a machine that slept is noticed within
// it. A variable for the tests only, atomic as a test may set it while
// an earlier test's job is still watched.
var deadlineEvery atomic.Int64

func init() { deadlineEvery.Store(int64(time.Minute)) }

// loadFeasible is the estimator of cfg, with the state Config.FeasibleFile
// keeps (none, or path "": nothing known yet).
func loadFeasible(cfg Config) (*feasible.Estimator, error) {
	var st feasible.State
	if cfg.FeasibleFile != "" {
		b, err := os.ReadFile(cfg.FeasibleFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("feasible file: %w", err)
		default:
			if err := json.Unmarshal(b, &st); err != nil {
				return nil, fmt.Errorf("feasible file %s: %w", cfg.FeasibleFile, err)
			}
		}
	}
	return feasible.New(cfg.Feasible, st), nil
}

// saveFeasibleLocked writes the estimator's state to Config.FeasibleFile,
// if set; a failure is logged (what is lost is some history). Called with
// c.mu held.
func (c *Client) saveFeasibleLocked() {
	if c.cfg.FeasibleFile == "" {
		return
	}
	b, err := json.Marshal(c.feas.State())
	if err == nil {
		err = keystore.WriteFileAtomic(c.cfg.FeasibleFile, append(b, '\n'), 0o600)
	}
	if err != nil {
		c.log.Warn("feasible file not written", "path", c.cfg.FeasibleFile, "err", err)
	}
}

// appKey names a project's application in the estimator.
func appKey(project, app string) string { return project + "/" + app }

// onOff records the client on (Run started) and, when the function it
// returns is called, off again (Run returned). One line in Run:
//
//	defer c.onOff()()
func (c *Client) onOff() func() {
	c.mu.Lock()
	c.feas.On(c.cfg.Now())
	c.saveFeasibleLocked()
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.feas.Off(c.cfg.Now())
		c.saveFeasibleLocked()
		c.mu.Unlock()
	}
}

// noteRunLocked records how long a job of the project's app ran (its
// wall time; job.Spec carries no estimate of its operations yet). Called
// with c.mu held.
func (c *Client) noteRunLocked(project, app string, wall time.Duration) {
	if app == "" || wall <= 0 {
		return
	}
	c.feas.Seen(c.cfg.Now())
	c.feas.Finished(appKey(project, app), 0, wall)
	c.saveFeasibleLocked()
}

// feasible returns ErrDeadline, wrapped with why, when this client cannot
// finish the job before its T_finish (see package client/feasible).
func (c *Client) feasible(cid string, spec *job.Spec) error {
	now := c.cfg.Now()
	c.mu.Lock()
	c.feas.Seen(now)
	ok, _, why := c.feas.Feasible(appKey(spec.Project, spec.App), 0, tFinish(spec), now)
	c.mu.Unlock()
	if ok {
		return nil
	}
	return fmt.Errorf("job %s: %w: %s", cid, ErrDeadline, why)
}

func tFinish(spec *job.Spec) time.Duration { return time.Duration(spec.TFinish) * time.Millisecond }

// lateLocked returns ErrDeadline, wrapped with why, when a held job,
// claimed at since and run for ran so far, can no longer end within its
// T_finish. Called with c.mu held.
func (c *Client) lateLocked(spec *job.Spec, since time.Time, ran time.Duration) error {
	now := c.cfg.Now()
	c.feas.Seen(now)
	late, why := c.feas.ShouldRelease(appKey(spec.Project, spec.App), 0, ran, now.Sub(since), tFinish(spec), now)
	if !late {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrDeadline, why)
}

// watchDeadline is ctx for a held job's run, cancelled with ErrDeadline
// when the job can no longer end within its T_finish (checked before the
// run and every deadlineEvery during it); stop ends the watch. Without a
// held job in ctx it is ctx itself.
func (c *Client) watchDeadline(ctx context.Context, spec *job.Spec) (run context.Context, stop func()) {
	h, _ := ctx.Value(heldKey{}).(*heldJob)
	if h == nil {
		return ctx, func() {}
	}
	run, cancel := context.WithCancelCause(ctx)
	started := c.cfg.Now()
	check := func() bool {
		c.mu.Lock()
		err := c.lateLocked(spec, h.since, max(0, c.cfg.Now().Sub(started)))
		c.mu.Unlock()
		if err != nil {
			cancel(err)
		}
		return err != nil
	}
	if check() {
		return run, func() { cancel(nil) }
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Duration(deadlineEvery.Load()))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-run.Done():
				return
			case <-t.C:
				if check() {
					return
				}
			}
		}
	}()
	return run, func() { close(done); cancel(nil) }
}

// lateCause is err, the error of a run under watchDeadline's run
// context, with ErrDeadline when the watch cancelled it.
func lateCause(run context.Context, err error) error {
	if cause := context.Cause(run); errors.Is(cause, ErrDeadline) && !errors.Is(err, ErrDeadline) {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return err
}
