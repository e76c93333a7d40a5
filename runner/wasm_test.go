//go:build linux || darwin

package runner_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/sandbox"
	"github.com/up-pool/up/testnet/testkit"
)

// moduleFile writes the WebAssembly build of the apps/wasm command name
// to a file and returns the task's module.
func moduleFile(t *testing.T, name string) *runner.Module {
	t.Helper()
	b := testkit.WasmModule(t, "github.com/up-pool/up/apps/wasm/"+name)
	p := filepath.Join(t.TempDir(), name+".wasm")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return &runner.Module{Key: []byte("key of " + name), Path: p}
}

// newWASMRunner is newRunner with project "demo" allowed modules.
func newWASMRunner(t *testing.T, edit func(*runner.Config)) (*runner.Runner, runner.Config) {
	t.Helper()
	r, cfg := newRunner(t, func(c *runner.Config) {
		c.AllowWASM = []string{"demo"}
		if edit != nil {
			edit(c)
		}
	})
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r, cfg
}

// TestWASMMatchesNative: the runner runs the WebAssembly build of
// mandelbrot in the sandbox, and its output is byte for byte the native
// built-in's for the same arguments (what validating a module's result
// against a native one rests on); the module's work dir is made and
// removed as a process's, its inputs copied in.
func TestWASMMatchesNative(t *testing.T) {
	mod := moduleFile(t, "mandelbrot")
	in := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(in, []byte("input"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, cfg := newWASMRunner(t, nil)
	for _, args := range [][]string{
		{"-2", "-1.5", "1", "1.5", "120", "90", "200"},
		{"-0.75", "0.1", "-0.74", "0.11", "64", "48", "2000"},
	} {
		native := run(t, r, runner.Task{App: "mandelbrot", Args: args})
		wasm := run(t, r, runner.Task{App: "mandelbrot", Args: args, WASM: mod, Inputs: map[string]string{"input0": in}})
		if native.ExitCode != 0 || len(native.Output) == 0 {
			t.Fatalf("native mandelbrot %q: %+v", args, native)
		}
		if !bytes.Equal(wasm.Output, native.Output) || wasm.ExitCode != 0 || wasm.Killed != "" {
			t.Errorf("mandelbrot %q: module output of %d bytes (exit %d, killed %q, stderr %q) differs from the native %d bytes",
				args, len(wasm.Output), wasm.ExitCode, wasm.Killed, wasm.Stderr, len(native.Output))
		}
		if wasm.Wall <= 0 || wasm.CPU != wasm.Wall || wasm.WorkDir != "" {
			t.Errorf("module outcome: wall %v, cpu %v, work dir %q", wasm.Wall, wasm.CPU, wasm.WorkDir)
		}
	}
	emptyDir(t, cfg.WorkRoot)
	// A failing module fails as the native built-in does.
	bad := []string{"0", "0", "0", "1", "10", "10", "10"} // x1 <= x0
	native := run(t, r, runner.Task{App: "mandelbrot", Args: bad})
	wasm := run(t, r, runner.Task{App: "mandelbrot", Args: bad, WASM: mod})
	if native.ExitCode != 1 || wasm.ExitCode != native.ExitCode || wasm.Stderr != native.Stderr {
		t.Errorf("refused arguments: module exit %d %q, native exit %d %q", wasm.ExitCode, wasm.Stderr, native.ExitCode, native.Stderr)
	}
}

// TestWASMNotAllowed: a module of a project not in AllowWASM is refused
// with ErrNotAllowed naming the project, before anything is created or
// read, whatever the native allow-list says; the control runs it for the
// allowed project.
func TestWASMNotAllowed(t *testing.T) {
	mod := moduleFile(t, "hashchain")
	r, cfg := newWASMRunner(t, func(c *runner.Config) { c.Allow["native"] = []string{"*"} })
	none, noneCfg := newRunner(t, nil) // no project allowed modules
	for _, tc := range []struct {
		r       *runner.Runner
		project string
	}{{r, "native"}, {r, "nobody"}, {none, "demo"}} {
		task := runner.Task{Project: tc.project, App: "hashchain", Args: []string{"1", "x"}, WASM: mod, Wall: time.Minute}
		_, err := tc.r.Run(context.Background(), task)
		if !errors.Is(err, runner.ErrNotAllowed) || !strings.Contains(err.Error(), tc.project) || !strings.Contains(err.Error(), "AllowWASM") {
			t.Errorf("module of %q: %v, want ErrNotAllowed naming the project and AllowWASM", tc.project, err)
		}
		if tc.r.AllowedWASM(tc.project) {
			t.Errorf("AllowedWASM(%q) = true", tc.project)
		}
	}
	emptyDir(t, cfg.WorkRoot)
	emptyDir(t, noneCfg.WorkRoot)
	if !r.AllowedWASM("demo") {
		t.Fatal("AllowedWASM(demo) = false")
	}
	if out := run(t, r, runner.Task{App: "hashchain", Args: []string{"1", "x"}, WASM: mod}); out.ExitCode != 0 || len(out.Output) != 65 {
		t.Errorf("control: the allowed project's module: %+v", out)
	}
}

// TestWASMLimits: a module past its memory, wall-clock, CPU or output
// limit is stopped and its Outcome says which, in the runner's words.
func TestWASMLimits(t *testing.T) {
	if sandbox.KilledWall != runner.KilledWall || sandbox.KilledMemory != runner.KilledMemory || sandbox.KilledOutput != runner.KilledOutput {
		t.Fatal("the sandbox's Killed reasons are not the runner's")
	}
	mandelbrot, hashchain := moduleFile(t, "mandelbrot"), moduleFile(t, "hashchain")
	r, _ := newWASMRunner(t, nil)
	big := []string{"-2", "-1.5", "1", "1.5", "4096", "4096", "10"}
	forever := []string{"1000000000", "x"}
	for _, tc := range []struct {
		name   string
		task   runner.Task
		killed string
	}{
		{"memory", runner.Task{App: "mandelbrot", Args: big, WASM: mandelbrot, Memory: 16 << 20}, runner.KilledMemory},
		{"wall", runner.Task{App: "hashchain", Args: forever, WASM: hashchain, Wall: 300 * time.Millisecond}, runner.KilledWall},
		{"cpu", runner.Task{App: "hashchain", Args: forever, WASM: hashchain, Wall: time.Minute, CPU: 300 * time.Millisecond}, runner.KilledCPU},
	} {
		// No bound on how long it took: the Killed reason says which
		// limit stopped it (a -race build compiles a module for 20 s).
		out := run(t, r, tc.task)
		if out.Killed != tc.killed || out.ExitCode == 0 {
			t.Errorf("%s: killed %q, exit %d, stderr %q; want killed %q", tc.name, out.Killed, out.ExitCode, out.Stderr, tc.killed)
		}
	}
	small, _ := newWASMRunner(t, func(c *runner.Config) { c.MaxOutput = 100 })
	out := run(t, small, runner.Task{App: "mandelbrot", Args: []string{"-2", "-1.5", "1", "1.5", "200", "200", "50"}, WASM: mandelbrot})
	if out.Killed != runner.KilledOutput || len(out.Output) != 100 {
		t.Errorf("output: killed %q with %d bytes, want the output limit and 100 bytes", out.Killed, len(out.Output))
	}
	// The control: within its memory limit, the same module runs.
	out = run(t, r, runner.Task{App: "mandelbrot", Args: []string{"-2", "-1.5", "1", "1.5", "64", "64", "10"}, WASM: mandelbrot, Memory: 64 << 20})
	if out.Killed != "" || out.ExitCode != 0 {
		t.Errorf("within the memory limit: killed %q, exit %d, stderr %q", out.Killed, out.ExitCode, out.Stderr)
	}
}

// TestWASMModuleFile: a module the sandbox holds loaded runs again by its
// key without its file; an unknown module whose file is missing is an
// error (ErrNoModule), not an outcome.
func TestWASMModuleFile(t *testing.T) {
	mod := moduleFile(t, "hashchain")
	r, _ := newWASMRunner(t, nil)
	task := runner.Task{App: "hashchain", Args: []string{"3", "y"}, WASM: mod}
	first := run(t, r, task)
	if err := os.Remove(mod.Path); err != nil {
		t.Fatal(err)
	}
	if again := run(t, r, task); !bytes.Equal(again.Output, first.Output) || again.ExitCode != 0 {
		t.Errorf("second run without the file: %+v, first %+v", again, first)
	}
	task.WASM = &runner.Module{Key: []byte("other"), Path: mod.Path}
	task.Project, task.Wall = "demo", time.Minute
	if _, err := r.Run(context.Background(), task); !errors.Is(err, runner.ErrNoModule) {
		t.Errorf("unknown module without a file: %v, want ErrNoModule", err)
	}
	task.WASM = &runner.Module{Path: mod.Path}
	if _, err := r.Run(context.Background(), task); err == nil || errors.Is(err, runner.ErrNotAllowed) {
		t.Errorf("module without a key: %v, want a validation error", err)
	}
}

// TestNewWASM: New refuses an empty project in AllowWASM and a bad
// sandbox setting.
func TestNewWASM(t *testing.T) {
	exe, _ := os.Executable()
	dir := t.TempDir()
	for name, cfg := range map[string]runner.Config{
		"empty project":  {Launcher: []string{exe}, WorkRoot: dir, AllowWASM: []string{""}},
		"sandbox memory": {Launcher: []string{exe}, WorkRoot: dir, AllowWASM: []string{"p"}, Sandbox: sandbox.Config{Memory: -1}},
	} {
		if _, err := runner.New(cfg); err == nil {
			t.Errorf("New accepted a config with %s", name)
		}
	}
}
