//go:build linux || darwin

package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// drainTimeout bounds how long Run waits, after the process group is gone,
// for the output pipes to close (a descendant that left the group could
// hold them open).
const drainTimeout = 2 * time.Second

// start runs the launcher and waits for it, enforcing the wall-clock limit,
// the output bound and ctx by killing the process group.
func (r *Runner) start(ctx context.Context, path string, args []string, dir string, env []string, t Task) (Outcome, error) {
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("runner: %w", err)
	}
	defer stdoutR.Close()
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutW.Close()
		return Outcome{}, fmt.Errorf("runner: %w", err)
	}
	defer stderrR.Close()
	stdin, err := openStdin(dir, t)
	if err != nil {
		stdoutW.Close()
		stderrW.Close()
		return Outcome{}, err
	}
	if stdin != nil {
		defer stdin.Close()
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{path}, args...),
		Dir:         dir,
		Env:         env,
		Stdout:      stdoutW,
		Stderr:      stderrW,
		SysProcAttr: sysProcAttr(),
	}
	if stdin != nil {
		cmd.Stdin = stdin // a file: the child reads it directly
	}
	began := time.Now()
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		return Outcome{}, fmt.Errorf("runner: starting the launcher: %w", err)
	}
	pid := cmd.Process.Pid

	stdout := newOutputBuffer(r.maxOutput)
	stderr := &stderrBuffer{max: stderrTail}
	var copies sync.WaitGroup
	copies.Go(func() { io.Copy(stdout, stdoutR) })
	copies.Go(func() { io.Copy(stderr, stderrR) })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	killed, ctxErr, waitErr := watch(ctx, pid, t.Wall, stdout.over, exited)
	wall := time.Since(began)
	killGroup(pid) // whatever the application left behind in its group

	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		stdoutR.Close()
		stderrR.Close()
		<-drained
	}
	return outcome(cmd.ProcessState, waitErr, t, stdout, stderr, killed, ctxErr, wall)
}

// watch waits for the process to exit, killing its group when the wall
// clock limit passes, the output goes over its bound (over is closed) or
// ctx ends; it returns what killed it ("" when nothing did), ctx's error
// when ctx ended, and the wait's error.
func watch(ctx context.Context, pid int, limit time.Duration, over <-chan struct{}, exited <-chan error) (killed string, ctxErr, waitErr error) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	done := ctx.Done()
	for {
		select {
		case waitErr = <-exited:
			return killed, ctxErr, waitErr
		case <-timer.C:
			killed = KilledWall
			killGroup(pid)
		case <-over:
			over = nil
			if killed == "" {
				killed = KilledOutput
			}
			killGroup(pid)
		case <-done:
			done = nil
			ctxErr = ctx.Err()
			killGroup(pid)
		}
	}
}

// outcome is the ended process's Outcome: its output, exit code (128 +
// the signal when a signal ended it), CPU and wall time, and the limit
// that ended it.
func outcome(ps *os.ProcessState, waitErr error, t Task, stdout *outputBuffer, stderr *stderrBuffer, killed string, ctxErr error, wall time.Duration) (Outcome, error) {
	var exitErr *exec.ExitError
	if ps == nil || (waitErr != nil && !errors.As(waitErr, &exitErr)) {
		return Outcome{}, fmt.Errorf("runner: waiting for the launcher: %w", waitErr)
	}
	out := Outcome{
		Output: stdout.buf.Bytes(),
		Stderr: stderr.String(),
		Killed: killed,
		CPU:    ps.UserTime() + ps.SystemTime(),
		Wall:   wall,
	}
	status := ps.Sys().(syscall.WaitStatus)
	sig := syscall.Signal(0)
	if status.Signaled() {
		sig = status.Signal()
		out.ExitCode = 128 + int(sig)
	} else {
		out.ExitCode = status.ExitStatus()
	}
	if stdout.exceeded {
		out.Killed = KilledOutput // even if the wall-clock timer also fired
	}
	if ctxErr != nil && out.Killed == "" {
		return out, fmt.Errorf("runner: task cancelled: %w", ctxErr)
	}
	if out.Killed == "" {
		out.Killed = classify(t, out, sig, stderr.memory)
	}
	return out, nil
}

// classify names the limit that ended a process the runner did not kill:
//   - CPU: SIGXCPU (RLIMIT_CPU's soft limit, fatal for most programs; the
//     launcher turns it into SIGKILL for built-ins) or SIGKILL (the hard
//     limit, one second later), with the CPU time at (within 10%) the limit;
//   - memory: a failed exit whose stderr reports an allocation failure
//     (RLIMIT_AS makes mmap/brk fail; the Go runtime then dies with "fatal
//     error: runtime: out of memory", exit status 2);
//   - wall clock: SIGKILL or SIGALRM after the limit (the launcher's own
//     backstop, one second after the limit).
func classify(t Task, out Outcome, sig syscall.Signal, memoryMessage bool) string {
	switch {
	case t.CPU > 0 && (sig == syscall.SIGXCPU || sig == syscall.SIGKILL) && 10*out.CPU >= 9*t.CPU:
		return KilledCPU
	case t.Memory > 0 && out.ExitCode != 0 && memoryMessage:
		return KilledMemory
	case (sig == syscall.SIGKILL || sig == syscall.SIGALRM) && out.Wall >= t.Wall:
		return KilledWall
	}
	return ""
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) {
	syscall.Kill(-pid, syscall.SIGKILL)
}
