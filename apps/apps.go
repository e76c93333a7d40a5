// Package apps holds the applications built into the up binary (for demos,
// tests and benchmarks); they run as subprocesses like any other application,
// via `up app exec`.
//
// Every application is deterministic: the same arguments give the same
// bytes on stdout, so results can be validated by replication.
package apps

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"time"
)

// App is a built-in application. Main runs it with the job's arguments,
// writing its result to stdout; workdir is the task's work directory (the
// current directory of the process). A returned *ExitError (or ExitError)
// selects the process exit code; any other error exits 1.
type App struct {
	Name, Help string
	Main       func(args []string, stdout io.Writer, workdir string) error
}

// ExitError asks for the process to exit with Code, without an error
// message.
type ExitError struct{ Code int }

// Error implements error.
func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

var registry = map[string]App{}

func register(a App) { registry[a.Name] = a }

func init() {
	register(App{Name: "mandelbrot", Help: "mandelbrot x0 y0 x1 y1 width height maxiter: render that tile of the Mandelbrot set as a grayscale PNG", Main: mandelbrotMain})
	register(App{Name: "hashchain", Help: "hashchain n seed: apply SHA-256 n times to SHA-256(seed) and print the hex digest", Main: hashchainMain})
	register(App{Name: "hashseq", Help: "hashseq n seed step: one step of a sequence: continue the hash chain of the work directory's checkpoint file (none at step 1: from SHA-256(seed)) by n rounds and print the checkpoint with \"step <step> <hex>\" added", Main: hashseqMain})
	register(App{Name: "digest", Help: "digest [-rounds n] file...: print the SHA-256 of each named file of the work directory (a job's inputs are input0, input1, …), as sha256sum does; -rounds hashes each digest n more times", Main: digestMain})
	register(App{Name: "tee", Help: "tee file...: copy standard input to stdout and to each named file of the work directory", Main: teeMain})
	register(App{Name: "noop", Help: "noop: do nothing and exit 0", Main: noopMain})
	register(App{Name: "sleep", Help: "sleep ms: sleep ms milliseconds, then print \"slept\"", Main: sleepMain})
	register(App{Name: "fail", Help: "fail code: exit with that code (0-255)", Main: failMain})
	register(App{Name: "burn", Help: "burn ms: spin until the process has used ms milliseconds of CPU time, then print \"burned\"", Main: burnMain})
	register(App{Name: "alloc", Help: "alloc mb: allocate and touch mb MiB, then print \"allocated\"", Main: allocMain})
}

// Lookup returns the built-in application called name.
func Lookup(name string) (App, bool) {
	a, ok := registry[name]
	return a, ok
}

// Names returns the names of the built-in applications, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// wantArgs checks the argument count against the argument names.
func wantArgs(app string, args []string, names ...string) error {
	if len(args) != len(names) {
		return fmt.Errorf("%s: want %d argument(s) %v, got %d", app, len(names), names, len(args))
	}
	return nil
}

// intArg parses a base-10 integer argument in [lo, hi].
func intArg(app, name, s string, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%s: argument %s: want an integer in [%d, %d], got %q", app, name, lo, hi, s)
	}
	return v, nil
}

// floatArg parses a finite floating-point argument.
func floatArg(app, name, s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s: argument %s: want a finite number, got %q", app, name, s)
	}
	return v, nil
}

func noopMain([]string, io.Writer, string) error { return nil }

func sleepMain(args []string, stdout io.Writer, _ string) error {
	if err := wantArgs("sleep", args, "ms"); err != nil {
		return err
	}
	ms, err := intArg("sleep", "ms", args[0], 0, math.MaxInt64/int64(time.Millisecond))
	if err != nil {
		return err
	}
	time.Sleep(time.Duration(ms) * time.Millisecond)
	_, err = io.WriteString(stdout, "slept\n")
	return err
}

func failMain(args []string, _ io.Writer, _ string) error {
	if err := wantArgs("fail", args, "code"); err != nil {
		return err
	}
	code, err := intArg("fail", "code", args[0], 0, 255)
	if err != nil {
		return err
	}
	if code == 0 {
		return nil
	}
	return ExitError{Code: int(code)}
}

func burnMain(args []string, stdout io.Writer, _ string) error {
	if err := wantArgs("burn", args, "ms"); err != nil {
		return err
	}
	ms, err := intArg("burn", "ms", args[0], 0, math.MaxInt64/int64(time.Millisecond))
	if err != nil {
		return err
	}
	target := time.Duration(ms) * time.Millisecond
	start := cpuTime()
	x := uint64(1)
	for cpuTime()-start < target {
		for range 1 << 16 { // about 0.1 ms of work between clock reads
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	runtime.KeepAlive(x)
	_, err = io.WriteString(stdout, "burned\n")
	return err
}

// maxAllocMiB bounds alloc's argument (1 TiB) so the byte count cannot overflow.
const maxAllocMiB = 1 << 20

func allocMain(args []string, stdout io.Writer, _ string) error {
	if err := wantArgs("alloc", args, "mb"); err != nil {
		return err
	}
	mb, err := intArg("alloc", "mb", args[0], 0, min(maxAllocMiB, math.MaxInt>>20))
	if err != nil {
		return err
	}
	buf := make([]byte, int(mb)<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12)
	}
	runtime.KeepAlive(buf)
	_, err = io.WriteString(stdout, "allocated\n")
	return err
}
