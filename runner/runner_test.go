//go:build linux || darwin

package runner_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet/testkit"
)

// TestMain makes the test binary its own launcher: with
// testkit.LauncherEnv in the environment it is `up app exec`.
func TestMain(m *testing.M) { testkit.ExecMain(m, runner.Exec) }

// newRunner returns a runner launching this test binary, with every built-in
// allowed for project "demo"; edit may change the config first.
func newRunner(t *testing.T, edit func(*runner.Config)) (*runner.Runner, runner.Config) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := runner.Config{
		Launcher: []string{exe},
		WorkRoot: filepath.Join(t.TempDir(), "work"),
		Allow:    map[string][]string{"demo": {"*"}},
		Env:      testkit.LauncherEnv(),
	}
	if edit != nil {
		edit(&cfg)
	}
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, cfg
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "app.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, r *runner.Runner, task runner.Task) runner.Outcome {
	t.Helper()
	if task.Project == "" {
		task.Project = "demo"
	}
	if task.Wall == 0 {
		task.Wall = 30 * time.Second
	}
	out, err := r.Run(context.Background(), task)
	if err != nil {
		t.Fatalf("Run(%s %q): %v", task.App, task.Args, err)
	}
	return out
}

// emptyDir fails the test unless dir is missing or empty.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("%s holds %d entries, want none", dir, len(entries))
	}
}

func TestBuiltins(t *testing.T) {
	r, cfg := newRunner(t, nil)

	out := run(t, r, runner.Task{App: "hashchain", Args: []string{"1000", "up"}})
	sum := apps.Hashchain(1000, "up")
	if want := hex.EncodeToString(sum[:]) + "\n"; string(out.Output) != want || out.ExitCode != 0 || out.Killed != "" {
		t.Errorf("hashchain: %+v, want output %q", out, want)
	}

	out = run(t, r, runner.Task{App: "mandelbrot", Args: []string{"-2", "-1.5", "1", "1.5", "120", "90", "100"}})
	img, err := png.Decode(bytes.NewReader(out.Output))
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("mandelbrot: %v (exit %d, stderr %q)", err, out.ExitCode, out.Stderr)
	}
	if b := img.Bounds(); b.Dx() != 120 || b.Dy() != 90 {
		t.Errorf("mandelbrot image is %v, want 120x90", b)
	}

	out = run(t, r, runner.Task{App: "noop"})
	if len(out.Output) != 0 || out.ExitCode != 0 || out.Killed != "" || out.Stderr != "" || out.WorkDir != "" {
		t.Errorf("noop: %+v", out)
	}
	emptyDir(t, cfg.WorkRoot)

	out = run(t, r, runner.Task{App: "hashchain", Args: []string{"many", "up"}})
	if out.ExitCode != 1 || !strings.Contains(out.Stderr, "argument n") || out.Killed != "" {
		t.Errorf("hashchain with a bad argument: %+v", out)
	}
}

func TestFail(t *testing.T) {
	r, _ := newRunner(t, nil)
	out := run(t, r, runner.Task{App: "fail", Args: []string{"3"}})
	if out.ExitCode != 3 || out.Killed != "" {
		t.Errorf("fail 3: %+v, want exit code 3", out)
	}
}

func TestNotAllowed(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	mark := script(t, `touch "$1"`+"\n")
	r, cfg := newRunner(t, func(c *runner.Config) {
		c.External = map[string]string{"mark": mark}
		c.Allow["other"] = []string{"hashchain"}
		c.Allow["ext"] = []string{"mark"}
	})
	for _, task := range []runner.Task{
		{Project: "demo", App: "mark"},        // "*" covers built-ins only
		{Project: "other", App: "mark"},       // not listed
		{Project: "nobody", App: "mark"},      // unknown project
		{Project: "other", App: "noop"},       // a built-in not listed
		{Project: "ext", App: "/bin/true"},    // not a known application
		{Project: "demo", App: "no-such-app"}, // "*" does not cover unknown names
	} {
		task.Args, task.Wall = []string{marker}, time.Minute
		_, err := r.Run(context.Background(), task)
		if !errors.Is(err, runner.ErrNotAllowed) || !strings.Contains(err.Error(), task.Project) || !strings.Contains(err.Error(), task.App) {
			t.Errorf("Run(%s, %s) = %v, want ErrNotAllowed naming both", task.Project, task.App, err)
		}
		if r.Allowed(task.Project, task.App) {
			t.Errorf("Allowed(%s, %s) = true", task.Project, task.App)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("a refused application ran (marker: %v)", err)
	}
	if _, err := os.Stat(cfg.WorkRoot); err != nil {
		t.Fatal(err)
	}
	emptyDir(t, cfg.WorkRoot)

	// The control: allowed, the same script does leave the marker.
	if !r.Allowed("ext", "mark") || !r.Allowed("other", "hashchain") || !r.Allowed("demo", "noop") {
		t.Error("Allowed refuses listed applications")
	}
	if out := run(t, r, runner.Task{Project: "ext", App: "mark", Args: []string{marker}}); out.ExitCode != 0 {
		t.Fatalf("allowed external app: %+v", out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the allowed application did not run: %v", err)
	}
}

func TestWallClockLimit(t *testing.T) {
	r, _ := newRunner(t, nil)
	start := time.Now()
	out := run(t, r, runner.Task{App: "sleep", Args: []string{"10000"}, Wall: 300 * time.Millisecond})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Run took %v with a 300ms wall-clock limit", elapsed)
	}
	if out.Killed != runner.KilledWall || out.ExitCode == 0 || out.Wall < 300*time.Millisecond {
		t.Errorf("sleep 10000: %+v, want killed for the wall-clock limit", out)
	}
}

// TestWallClockKillsGroup checks that the whole process group dies: the
// script's background child holds stdout open, so Run could only return
// early by killing it too.
func TestWallClockKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	app := script(t, `sleep 30 & echo $! > "$1"; wait`+"\n")
	r, _ := newRunner(t, func(c *runner.Config) {
		c.External = map[string]string{"sleeper": app}
		c.Allow["demo"] = []string{"sleeper"}
	})
	start := time.Now()
	out := run(t, r, runner.Task{App: "sleeper", Args: []string{pidFile}, Wall: 300 * time.Millisecond})
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
		t.Errorf("Run took %v with a 300ms wall-clock limit", elapsed)
	}
	if out.Killed != runner.KilledWall {
		t.Errorf("sleeper: %+v, want killed for the wall-clock limit", out)
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
	if err == nil && !strings.Contains(string(stat), ") Z ") {
		t.Errorf("the background child %s survived: %s", pid, stat)
	}
}

func TestCPULimit(t *testing.T) {
	r, _ := newRunner(t, nil)
	out := run(t, r, runner.Task{App: "burn", Args: []string{"5000"}, CPU: time.Second})
	if out.Killed != runner.KilledCPU || out.ExitCode == 0 {
		t.Errorf("burn 5000: %+v, want killed for the CPU limit", out)
	}
	if out.CPU < 900*time.Millisecond || out.CPU > 3*time.Second {
		t.Errorf("burn used %v of CPU with a 1s limit", out.CPU)
	}
	// The control: within the limit.
	if out := run(t, r, runner.Task{App: "burn", Args: []string{"100"}, CPU: 2 * time.Second}); out.Killed != "" || string(out.Output) != "burned\n" {
		t.Errorf("burn 100: %+v", out)
	}
}

// memLimit leaves a Go built-in (about 1.2 GB mapped at startup, 1.8 GB
// with -race) room for small allocations but not for 4 GiB.
const memLimit = 3 << 30

func TestMemoryLimit(t *testing.T) {
	r, _ := newRunner(t, nil)
	out := run(t, r, runner.Task{App: "alloc", Args: []string{"4096"}, Memory: memLimit})
	if out.Killed != runner.KilledMemory || out.ExitCode == 0 {
		t.Errorf("alloc 4096: %+v, want killed for the memory limit", out)
	}
	out = run(t, r, runner.Task{App: "alloc", Args: []string{"64"}, Memory: memLimit})
	if out.Killed != "" || string(out.Output) != "allocated\n" {
		t.Errorf("alloc 64: %+v, want success", out)
	}
	// Without a memory limit, the same failure text is not a memory kill.
	app := script(t, `echo "fatal error: runtime: out of memory" >&2; exit 2`+"\n")
	r, _ = newRunner(t, func(c *runner.Config) {
		c.External = map[string]string{"liar": app}
		c.Allow["demo"] = []string{"liar"}
	})
	if out := run(t, r, runner.Task{App: "liar"}); out.Killed != "" || out.ExitCode != 2 {
		t.Errorf("liar without a memory limit: %+v", out)
	}
}

func TestOutputLimit(t *testing.T) {
	r, _ := newRunner(t, func(c *runner.Config) { c.MaxOutput = 100 })
	out := run(t, r, runner.Task{App: "mandelbrot", Args: []string{"-2", "-1.5", "1", "1.5", "200", "200", "50"}})
	if out.Killed != runner.KilledOutput || len(out.Output) != 100 {
		t.Errorf("mandelbrot: killed %q with %d bytes, want the output limit and 100 bytes", out.Killed, len(out.Output))
	}
	out = run(t, r, runner.Task{App: "hashchain", Args: []string{"1", "x"}})
	if out.Killed != "" || len(out.Output) != 65 {
		t.Errorf("hashchain within the output limit: %+v", out)
	}
}

func TestWorkDir(t *testing.T) {
	src := t.TempDir()
	in1, in2 := filepath.Join(src, "a.txt"), filepath.Join(src, "b.bin")
	os.WriteFile(in1, []byte("alpha\n"), 0o644)
	os.WriteFile(in2, []byte("beta\n"), 0o644)
	app := script(t, "cat in.txt sub/data.bin && pwd && echo changed > in.txt && mkdir ro && chmod 500 ro\n")
	r, cfg := newRunner(t, func(c *runner.Config) {
		c.External = map[string]string{"lister": app}
		c.Allow["demo"] = []string{"lister"}
	})
	task := runner.Task{App: "lister", Inputs: map[string]string{"in.txt": in1, "sub/data.bin": in2}}
	out := run(t, r, task)
	lines := strings.Split(string(out.Output), "\n")
	if out.ExitCode != 0 || len(lines) < 3 || lines[0] != "alpha" || lines[1] != "beta" || filepath.Dir(lines[2]) != cfg.WorkRoot {
		t.Fatalf("lister: %+v", out)
	}
	if b, _ := os.ReadFile(in1); string(b) != "alpha\n" {
		t.Errorf("the application changed the original input: %q", b)
	}
	emptyDir(t, cfg.WorkRoot)

	// Bad input names and missing inputs create nothing.
	for _, name := range []string{"../escape", "/abs", "", "a/../../b"} {
		task := runner.Task{Project: "demo", App: "noop", Wall: time.Second, Inputs: map[string]string{name: in1}}
		if _, err := r.Run(context.Background(), task); err == nil {
			t.Errorf("input name %q accepted", name)
		}
	}
	missing := runner.Task{Project: "demo", App: "noop", Wall: time.Second, Inputs: map[string]string{"x": filepath.Join(src, "none")}}
	if _, err := r.Run(context.Background(), missing); err == nil {
		t.Error("a missing input was accepted")
	}
	emptyDir(t, cfg.WorkRoot)

	// KeepWorkDirs keeps it, with the inputs.
	r, cfg = newRunner(t, func(c *runner.Config) {
		c.KeepWorkDirs = true
		c.External = map[string]string{"lister": app}
		c.Allow["demo"] = []string{"lister"}
	})
	out = run(t, r, task)
	if filepath.Dir(out.WorkDir) != cfg.WorkRoot {
		t.Fatalf("WorkDir %q is not in %q", out.WorkDir, cfg.WorkRoot)
	}
	if b, err := os.ReadFile(filepath.Join(out.WorkDir, "sub", "data.bin")); string(b) != "beta\n" {
		t.Errorf("kept work dir: sub/data.bin = %q, %v", b, err)
	}
	os.Chmod(filepath.Join(out.WorkDir, "ro"), 0o700) // let t.TempDir clean up
}

func TestCancel(t *testing.T) {
	r, _ := newRunner(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := r.Run(ctx, runner.Task{Project: "demo", App: "sleep", Args: []string{"10000"}, Wall: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) || out.Killed != "" || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled Run = %+v, %v after %v", out, err, time.Since(start))
	}
	if _, err := r.Run(ctx, runner.Task{Project: "demo", App: "noop", Wall: time.Minute}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run with a done context = %v", err)
	}
}

func TestTaskValidation(t *testing.T) {
	r, cfg := newRunner(t, nil)
	for _, task := range []runner.Task{
		{Project: "demo", App: "noop"},
		{Project: "demo", App: "noop", Wall: time.Second, CPU: -1},
		{Project: "demo", App: "noop", Wall: time.Second, Memory: -1},
	} {
		if _, err := r.Run(context.Background(), task); err == nil || errors.Is(err, runner.ErrNotAllowed) {
			t.Errorf("Run(%+v) = %v, want a validation error", task, err)
		}
	}
	emptyDir(t, cfg.WorkRoot)
}

func TestNew(t *testing.T) {
	exe, _ := os.Executable()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data")
	os.WriteFile(notExec, nil, 0o644)
	for name, cfg := range map[string]runner.Config{
		"no launcher":       {WorkRoot: dir},
		"missing launcher":  {Launcher: []string{filepath.Join(dir, "none")}, WorkRoot: dir},
		"no work root":      {Launcher: []string{exe}},
		"negative output":   {Launcher: []string{exe}, WorkRoot: dir, MaxOutput: -1},
		"relative external": {Launcher: []string{exe}, WorkRoot: dir, External: map[string]string{"x": "bin/x"}},
		"shadowing":         {Launcher: []string{exe}, WorkRoot: dir, External: map[string]string{"noop": exe}},
		"not executable":    {Launcher: []string{exe}, WorkRoot: dir, External: map[string]string{"x": notExec}},
		"star external":     {Launcher: []string{exe}, WorkRoot: dir, External: map[string]string{"*": exe}},
		"bad env":           {Launcher: []string{exe}, WorkRoot: dir, Env: []string{"NOEQUALS"}},
		"empty app":         {Launcher: []string{exe}, WorkRoot: dir, Allow: map[string][]string{"p": {""}}},
	} {
		if _, err := runner.New(cfg); err == nil {
			t.Errorf("New accepted a config with %s", name)
		}
	}
}
