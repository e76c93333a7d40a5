//go:build linux || darwin

package runner

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/up-pool/up/apps"
)

const (
	// wallGrace is how long after the wall-clock limit the backstop acts.
	wallGrace = time.Second
	// maxBackstop caps the backstop's delay (and keeps it from overflowing).
	maxBackstop = 365 * 24 * time.Hour

	execUsageString = "usage: up app exec [--cpu seconds] [--mem bytes] [--wall duration] -- app|/abs/path [args...]"
)

// Exec is the body of `up app exec`: parse the flags, set RLIMIT_CPU and
// RLIMIT_AS on the current process (syscall.Setrlimit), then run the
// built-in app in-process (apps.Lookup) writing to stdout, or syscall.Exec
// an external executable (absolute path). It returns the process exit code.
// It never returns for an external exec that succeeds.
//
// Flags: --cpu whole seconds of CPU time (soft limit; the hard limit, which
// delivers SIGKILL, is one second more), --mem bytes of address space,
// --wall a duration; 0 means no limit. It also sets RLIMIT_CORE to 0. The
// wall-clock limit is the runner's to enforce; Exec adds a backstop one
// second later in case the runner is gone: a timer that kills a built-in,
// or (Linux) an ITIMER_REAL alarm that survives the exec of an external
// program and ends it with SIGALRM. A built-in that gets SIGXCPU kills
// itself with SIGKILL (the Go runtime otherwise ignores SIGXCPU).
//
// The address-space limit counts everything mapped, not just what is used:
// a Go process (Exec itself, hence every built-in) has about 1.2 GB mapped
// once started (Go 1.26, linux/amd64; about 1.8 GB with -race), so a built-in
// can allocate nothing new under a --mem below that, and its useful budget
// is --mem minus that baseline. The limit is set after the runtime has
// started, so small limits make built-ins fail with "out of memory", not
// crash at startup; an external Go program would need the baseline to start.
//
// A built-in returning apps.ExitError exits with its code (1 if outside
// 1-255); another error is printed to stderr and exits 1. An external
// program's output goes to the process's own stdout and stderr (file
// descriptors 1 and 2), not to the writers.
func Exec(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("up app exec", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprintln(stderr, execUsageString)
		flags.PrintDefaults()
	}
	cpu := flags.Int64("cpu", 0, "CPU-time limit in whole seconds (0 = none)")
	mem := flags.Int64("mem", 0, "address-space limit in bytes (0 = none)")
	wall := flags.Duration("wall", 0, "wall-clock limit, enforced by the caller; a backstop kills the app one second after it (0 = none)")
	if err := flags.Parse(args); err != nil {
		return ExitLauncher
	}
	if flags.NArg() == 0 || *cpu < 0 || *mem < 0 || *wall < 0 {
		fmt.Fprintln(stderr, execUsageString)
		return ExitLauncher
	}
	name, appArgs := flags.Arg(0), flags.Args()[1:]
	app, builtin := apps.Lookup(name)
	if !builtin && !filepath.IsAbs(name) {
		fmt.Fprintf(stderr, "up app exec: no built-in application %q (external ones need an absolute path)\n", name)
		return ExitNotFound
	}
	if err := setLimits(*cpu, *mem); err != nil {
		fmt.Fprintf(stderr, "up app exec: %v\n", err)
		return ExitLauncher
	}
	if !builtin {
		if *wall > 0 {
			if err := setAlarm(min(*wall, maxBackstop) + wallGrace); err != nil {
				fmt.Fprintf(stderr, "up app exec: wall-clock backstop: %v\n", err)
				return ExitLauncher
			}
		}
		err := syscall.Exec(name, append([]string{name}, appArgs...), os.Environ())
		fmt.Fprintf(stderr, "up app exec: %s: %v\n", name, err)
		if errors.Is(err, fs.ErrNotExist) {
			return ExitNotFound
		}
		return ExitCannotExec
	}

	if *cpu > 0 {
		xcpu := make(chan os.Signal, 1)
		signal.Notify(xcpu, syscall.SIGXCPU)
		defer signal.Stop(xcpu)
		go func() {
			<-xcpu
			fmt.Fprintln(stderr, "up app exec: CPU-time limit exceeded")
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}()
	}
	if *wall > 0 {
		t := time.AfterFunc(min(*wall, maxBackstop)+wallGrace, func() {
			fmt.Fprintln(stderr, "up app exec: wall-clock limit exceeded")
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		})
		defer t.Stop()
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "up app exec: %v\n", err)
		return ExitLauncher
	}
	w := bufio.NewWriterSize(stdout, 64<<10)
	err = app.Main(appArgs, w, wd)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return exitCode(err, stderr)
}

// exitCode maps a built-in's error to an exit code, printing plain errors.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var code int
	var e apps.ExitError
	var pe *apps.ExitError
	switch {
	case errors.As(err, &e):
		code = e.Code
	case errors.As(err, &pe) && pe != nil:
		code = pe.Code
	default:
		fmt.Fprintln(stderr, err)
		return 1
	}
	if code < 1 || code > 255 {
		return 1
	}
	return code
}

// setLimits sets RLIMIT_CPU (soft cpu, hard cpu+1 seconds) and RLIMIT_AS
// (mem bytes) unless 0, and RLIMIT_CORE to 0, never above the current hard
// limits.
func setLimits(cpu, mem int64) error {
	set := func(res int, name string, soft, hard uint64) error {
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(res, &cur); err != nil {
			return fmt.Errorf("getrlimit %s: %w", name, err)
		}
		hard, soft = min(hard, cur.Max), min(soft, cur.Max)
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: soft, Max: hard}); err != nil {
			return fmt.Errorf("setrlimit %s %d: %w", name, soft, err)
		}
		return nil
	}
	if err := set(syscall.RLIMIT_CORE, "RLIMIT_CORE", 0, 0); err != nil {
		return err
	}
	if cpu > 0 {
		if err := set(syscall.RLIMIT_CPU, "RLIMIT_CPU", uint64(cpu), uint64(cpu)+1); err != nil {
			return err
		}
	}
	if mem > 0 {
		if err := set(syscall.RLIMIT_AS, "RLIMIT_AS", uint64(mem), uint64(mem)); err != nil {
			return err
		}
	}
	return nil
}
