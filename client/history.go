package client

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/wire"
)

// historyMax bounds the finished jobs the client remembers.
const historyMax = 100

// FinishedJob is a job the client held and is done with.
type FinishedJob struct {
	Job     string `json:"job"`
	Project string `json:"project"`
	App     string `json:"app,omitempty"` // "" when its spec was never read
	// Outcome is "done" (result submitted), "failed" (ran, its result not
	// delivered) or "released" (given back before it ran).
	Outcome string `json:"outcome"`
	// Reason says why a job was released, in wire.SkipReason's words.
	Reason   string    `json:"reason,omitempty"`
	Error    string    `json:"error,omitempty"`
	Finished time.Time `json:"finished"`
	Age      float64   `json:"age_s"`     // seconds from Finished to the History
	Elapsed  float64   `json:"elapsed_s"` // seconds from its claim to its end
	CPU      float64   `json:"cpu_s"`     // CPU seconds it used (0: it did not run)
	Wall     float64   `json:"wall_s"`    // seconds it ran (0: it did not run)
}

// History is the client's latest finished jobs, newest first.
type History struct {
	Jobs []FinishedJob `json:"jobs"`
}

// JobLimits are the limits a job runs under (see limits): wall-clock and
// CPU time in seconds, memory in bytes (0: none).
type JobLimits struct {
	Wall   float64 `json:"wall_s"`
	CPU    float64 `json:"cpu_s"`
	Memory int64   `json:"memory_bytes"`
}

// heldJob is a job claimed and not ended: process's own context, to
// release it on Detach, and what its run used.
type heldJob struct {
	cid, project string
	app          string // once its spec is read
	since        time.Time
	ctx          context.Context
	cancel       context.CancelCauseFunc
	key          []byte // the job's key
	ran          bool   // the runner ran it to an outcome
	errored      bool   // that outcome was a failure: a non-zero exit or a limit kill
	cpu, wall    time.Duration
}

type heldKey struct{}

// begin registers a job process claimed, and replaces *ctx with its own
// context, which Detach cancels while the job has not run; the function
// it returns, deferred, records how the job ended (*err) in the history
// and the explain log. One line in process:
//
//	defer c.begin(&ctx, project, cl, &err)()
func (c *Client) begin(ctx *context.Context, project string, cl *claimclient.Claim, err *error) func() {
	h := &heldJob{cid: jobName(cl.Job), key: cl.Job, project: project, since: c.cfg.Now()}
	h.ctx, h.cancel = context.WithCancelCause(*ctx)
	*ctx = context.WithValue(h.ctx, heldKey{}, h)
	c.mu.Lock()
	c.ctl.held[h.cid] = h
	c.mu.Unlock()
	return func() {
		c.end(h, *err)
		c.reportQuota(h, *err)
		h.cancel(nil)
	}
}

// reportQuota tells the client's record node how a held job ended (in
// the background): failed when it ran to a failure, delivered or not;
// done when its result was delivered; released otherwise.
func (c *Client) reportQuota(h *heldJob, err error) {
	outcome := quota.Released
	switch {
	case h.ran && (h.errored || err != nil):
		outcome = quota.Failed
	case err == nil:
		outcome = quota.Done
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.claimer.Report(ctx, h.key, outcome); err != nil {
			c.log.Debug("quota report", "job", h.cid, "err", err)
		}
	}()
}

// end records a held job's end.
func (c *Client) end(h *heldJob, err error) {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ctl.held, h.cid)
	if c.overQuota {
		c.overQuota = false
		c.kickLocked() // a worker napping at the quota may claim again
	}
	f := FinishedJob{Job: h.cid, Project: h.project, App: cmp.Or(h.app, c.exp.app(h.project, h.cid)), Outcome: "done",
		Finished: now, Elapsed: now.Sub(h.since).Seconds(), CPU: h.cpu.Seconds(), Wall: h.wall.Seconds()}
	switch {
	case err == nil:
	case h.ran:
		f.Outcome, f.Reason, f.Error = "failed", wire.SkipFailed.String(), err.Error()
	default:
		f.Outcome, f.Error = "released", err.Error()
		f.Reason = decisionReason(err)
		if stopped := context.Cause(h.ctx); stopped != nil && !errors.Is(err, ErrSameUnit) {
			f.Reason = wire.SkipStopping.String()
			if errors.Is(stopped, errDetached) {
				c.failed-- // process counted it failed: it was given back, it did not fail
			}
		}
	}
	if h.ran {
		c.noteRunLocked(h.project, f.App, h.wall) // its run time, for the deadline check
	}
	c.hist = append(c.hist, f)
	if len(c.hist) > historyMax {
		c.hist = append(c.hist[:0], c.hist[len(c.hist)-historyMax:]...)
	}
	c.exp.decide(h.project, h.cid, now, f.Outcome, f.Reason, f.Error)
}

// decisionReason names why a job was skipped or released, from the
// error that stopped it, in wire.SkipReason's words (skipReason), or "job
// of another project".
func decisionReason(err error) string {
	switch why := skipReason(err); {
	case why != wire.SkipUnknown:
		return why.String()
	case errors.Is(err, errOtherProject):
		return "job of another project"
	case errors.Is(err, errStopping), errors.Is(err, errDetached), errors.Is(err, context.Canceled):
		return wire.SkipStopping.String()
	}
	return wire.SkipFetch.String()
}

// History returns the latest finished jobs (historyMax at most), newest
// first.
func (c *Client) History() History {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	h := History{Jobs: make([]FinishedJob, 0, len(c.hist))}
	for i := len(c.hist) - 1; i >= 0; i-- {
		f := c.hist[i]
		f.Age = now.Sub(f.Finished).Seconds()
		h.Jobs = append(h.Jobs, f)
	}
	return h
}

// recorder is the client's Executor around Config.Runner: it shows a
// running job's limits in Status and keeps what its run used.
type recorder struct {
	Executor
	c *Client
}

// Run runs t with the wrapped Executor, recording its limits and usage
// against the held job of ctx.
func (r recorder) Run(ctx context.Context, t runner.Task) (runner.Outcome, error) {
	h, _ := ctx.Value(heldKey{}).(*heldJob)
	if h != nil {
		r.c.mu.Lock()
		if j := r.c.jobs[h.cid]; j != nil {
			j.Limits = &JobLimits{Wall: t.Wall.Seconds(), CPU: t.CPU.Seconds(), Memory: t.Memory}
		}
		r.c.mu.Unlock()
	}
	out, err := r.Executor.Run(ctx, t)
	if h != nil && err == nil {
		r.c.mu.Lock()
		h.ran, h.cpu, h.wall = true, out.CPU, out.Wall
		h.errored = out.ExitCode != 0 || out.Killed != ""
		r.c.mu.Unlock()
	}
	return out, err
}
