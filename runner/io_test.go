//go:build linux || darwin

package runner_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/up-pool/up/apps/wasm"
	"github.com/up-pool/up/runner"
)

// TestStdinAndOutputs: a task's standard input is the input it names and
// its output files come back in order, a file not written as nil — for a
// process and for a module (the built-in tee, natively and as the
// apps/wasm module). Control: without Stdin the application reads
// nothing.
func TestStdinAndOutputs(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the built-in module")
	}
	in := filepath.Join(t.TempDir(), "in")
	data := bytes.Repeat([]byte("standard input\n"), 1000)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	modPath := filepath.Join(t.TempDir(), "builtin.wasm")
	if err := os.WriteFile(modPath, wasm.Builtin, 0o644); err != nil {
		t.Fatal(err)
	}
	mod := &runner.Module{Key: []byte("builtin"), Path: modPath}
	r, _ := newWASMRunner(t, nil)
	for _, m := range []*runner.Module{nil, mod} {
		task := runner.Task{App: "tee", Args: []string{"a.txt", "b.txt"}, WASM: m, Inputs: map[string]string{"input0": in},
			Stdin: "input0", Outputs: []string{"b.txt", "never.txt", "a.txt"}}
		out := run(t, r, task)
		if out.ExitCode != 0 || !bytes.Equal(out.Output, data) || len(out.Files) != 3 ||
			!bytes.Equal(out.Files[0], data) || out.Files[1] != nil || !bytes.Equal(out.Files[2], data) {
			t.Fatalf("module %v: exit %d (%s), %d bytes out, files %d", m != nil, out.ExitCode, out.Stderr, len(out.Output), len(out.Files))
		}
		task.Stdin = ""
		if out := run(t, r, task); out.ExitCode != 0 || len(out.Output) != 0 || len(out.Files[0]) != 0 {
			t.Fatalf("control, module %v: without standard input it read %d bytes", m != nil, len(out.Output))
		}
	}
}

// TestIORefused: a standard input that is not one of the inputs, or an
// output name that is not a plain file name, is refused before anything
// runs.
func TestIORefused(t *testing.T) {
	r, _ := newRunner(t, nil)
	for name, task := range map[string]runner.Task{
		"stdin not an input": {App: "noop", Stdin: "input0"},
		"output with a dir":  {App: "noop", Outputs: []string{"a/b"}},
		"output dot-dot":     {App: "noop", Outputs: []string{".."}},
	} {
		task.Project, task.Wall = "demo", 1e9
		if _, err := r.Run(context.Background(), task); err == nil || !strings.Contains(err.Error(), "runner:") {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
}
