package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/runner"
)

// CheckpointFile is the name, in a sequence step's work directory, of
// the previous step's checkpoint (absent at step 1); the step's number
// is the application's last argument, and its standard output the new
// checkpoint.
const CheckpointFile = "checkpoint"

// TricklePrefix begins the Error of a trickle's sealed record: a trickle
// passed off as the job's result (by a replica that holds it) is then an
// error result, which the project records, credits nothing for and
// reissues, never a valid one.
const TricklePrefix = "trickle: "

// ErrCheckpoint reports a sequence step whose checkpoint could not be
// made or stored.
var ErrCheckpoint = errors.New("sequence checkpoint")

// run runs a claimed job: a plain job in one run, a sequence step by
// step (runSequence). Its outcome is what the result reports.
func (c *Client) run(ctx context.Context, cl *claimclient.Claim, signed *job.Signed, spec *job.Spec, inputs map[string]string, module string) (runner.Outcome, error) {
	if spec.IsSequence() {
		return c.runSequence(ctx, cl, signed, spec, inputs, module)
	}
	runCtx, stopWatch := c.watchDeadline(ctx, spec) // given back once it cannot end in time
	out, err := c.cfg.Runner.Run(runCtx, c.task(spec, inputs, module))
	stopWatch()
	if err != nil {
		return out, fmt.Errorf("run %s: %w", spec.App, lateCause(runCtx, err))
	}
	return out, nil
}

// runSequence runs a sequence's steps in order from the newest
// checkpoint its replicas hold (resume), each step from the previous
// step's checkpoint, and after each step stores the new checkpoint, with
// a trickle for the project, on a majority of the replicas: that renews
// the claim for another T_finish there. A step that fails ends the
// sequence with its outcome (the result reports it). It stops early when
// the replicas answer a shorter sequence (the project ended it). The
// outcome returned carries the last checkpoint as its output.
func (c *Client) runSequence(ctx context.Context, cl *claimclient.Claim, signed *job.Signed, spec *job.Spec, inputs map[string]string, module string) (runner.Outcome, error) {
	key := signed.Key()
	from, state, steps := c.resume(ctx, cl, spec)
	dir, err := os.MkdirTemp("", "up-seq-")
	if err != nil {
		return runner.Outcome{}, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	defer os.RemoveAll(dir)
	last := runner.Outcome{Output: state}
	for step := from + 1; step <= steps; step++ {
		task := c.task(spec, inputs, module)
		task.Args = append(slices.Clip(spec.Args), strconv.Itoa(int(step)))
		if step > 1 {
			path := filepath.Join(dir, fmt.Sprintf("ckpt%d", step-1))
			if err := os.WriteFile(path, state, 0o600); err != nil {
				return last, fmt.Errorf("%w: %v", ErrCheckpoint, err)
			}
			task.Inputs = maps.Clone(task.Inputs)
			if task.Inputs == nil {
				task.Inputs = map[string]string{}
			}
			task.Inputs[CheckpointFile] = path
		}
		runCtx, stopWatch := c.watchDeadline(ctx, spec)
		out, err := c.cfg.Runner.Run(runCtx, task)
		stopWatch()
		if err != nil {
			return out, fmt.Errorf("run %s step %d: %w", spec.App, step, lateCause(runCtx, err))
		}
		if out.ExitCode != 0 || out.Killed != "" {
			return out, nil
		}
		if state = out.Output; len(state) > job.MaxCheckpointData {
			return out, fmt.Errorf("%w: step %d's state of %d bytes (max %d)", ErrCheckpoint, step, len(state), job.MaxCheckpointData)
		}
		n, err := c.storeStep(ctx, cl, key, spec, step, steps, out)
		if err != nil {
			return out, err
		}
		last = out
		if n > 0 && n != steps {
			steps = max(n, step) // the project ended or extended it
		}
	}
	return last, nil
}

// storeStep signs step's checkpoint (out's output) with a sealed trickle
// for the project and stores it on the claim's replicas; it restarts the
// deadline watch's step clock and returns the step count the replicas
// answered.
func (c *Client) storeStep(ctx context.Context, cl *claimclient.Claim, key []byte, spec *job.Spec, step, steps uint16, out runner.Outcome) (uint16, error) {
	id := c.cfg.Agent.Identity()
	tr, err := result.Seal(result.Inner{
		Job: key, ClientCert: id.Cert.Raw, Output: []byte(fmt.Sprintf("step %d of %d\n", step, steps)),
		Error: fmt.Sprintf("%sstep %d of %d", TricklePrefix, step, steps),
		CPU:   out.CPU.Milliseconds(), Wall: out.Wall.Milliseconds(), At: c.cfg.Now().UnixMilli(),
	}, id.Key, spec.ResultKey, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: trickle of step %d: %v", ErrCheckpoint, step, err)
	}
	ck, err := job.SignCheckpoint(job.Checkpoint{Job: key, Cert: id.Cert.Raw, Start: cl.Start, Step: step,
		Data: out.Output, Trickle: tr.Encode()}, id.Key)
	if err != nil {
		return 0, fmt.Errorf("%w: step %d: %v", ErrCheckpoint, step, err)
	}
	_, n, err := c.claimer.PutCheckpoint(ctx, cl, ck.Encode())
	if err != nil {
		return 0, fmt.Errorf("%w: step %d: %v", ErrCheckpoint, step, err)
	}
	if h, _ := ctx.Value(heldKey{}).(*heldJob); h != nil {
		c.mu.Lock()
		h.since = c.cfg.Now() // the replicas measure the next step's deadline from now
		c.mu.Unlock()
	}
	c.log.Debug("sequence step stored", "job", jobName(key), "step", step, "of", steps)
	return n, nil
}

// resume is where a claimed sequence starts: after the newest checkpoint
// any of the claim's nodes holds that is signed by a client whose
// certificate the CA issued (not revoked) for that key, of this job and
// within the sequence; step 0 and no state when none is. steps is the
// sequence's length a majority of the nodes answered (a project's order
// may have changed the spec's). A checkpoint a
// node made up, or altered, fails the signature or the certificate and
// is passed over; one held back only costs the steps it would have
// saved.
func (c *Client) resume(ctx context.Context, cl *claimclient.Claim, spec *job.Spec) (from uint16, state []byte, steps uint16) {
	cks, answered := c.claimer.Checkpoints(ctx, cl)
	if steps = job.MajorityAtLeast(answered); steps == 0 {
		steps = spec.Steps
	}
	v := c.cfg.Agent.Endpoint().Admission().Verifier()
	var best *job.Checkpoint
	for _, ck := range cks {
		if ck.Step > steps || ck.Verify() != nil || !job.NewerCheckpoint(ck, best) {
			continue
		}
		id, err := v.VerifyCert(ck.Cert, c.cfg.Now(), certs.RoleClient)
		if err != nil || !bytes.Equal(id.PublicKey, ck.Client) {
			c.log.Warn("checkpoint refused: client certificate", "job", jobName(cl.Job), "step", ck.Step, "err", err)
			continue
		}
		best = ck
	}
	if best == nil {
		return 0, nil, steps
	}
	c.log.Info("sequence resumed", "job", jobName(cl.Job), "from step", best.Step, "of", steps)
	return best.Step, best.Data, steps
}
