package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/apps/wasm"
	"github.com/up-pool/up/sandbox"
)

// TestBuiltinRunsEveryApp runs the embedded module in the sandbox as each
// built-in (argv[0]) and the native built-in with the same arguments and
// work directory: the same stdout, exit code and error. An unknown name
// exits 127 (the control: the module does dispatch on argv[0]).
func TestBuiltinRunsEveryApp(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a 3.5 MB module (seconds, a minute under -race)")
	}
	s, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inputs := map[string][]byte{"input0": []byte("tile data"), "input1": bytes.Repeat([]byte("x"), 3<<20)}
	for _, c := range []struct {
		app  string
		args []string
	}{
		{"mandelbrot", []string{"-2.2", "-1.5", "-1.825", "-1.125", "32", "32", "256"}},
		{"hashchain", []string{"1000", "seed"}},
		{"digest", []string{"input0", "input1"}},
		{"digest", []string{"-rounds", "1000", "input1"}},
		{"digest", []string{"missing"}},
		{"fail", []string{"3"}},
	} {
		dir := t.TempDir()
		for name, b := range inputs {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		wantOut, wantExit, wantErr := native(t, c.app, c.args, dir)
		out, err := s.Run(context.Background(), sandbox.Task{Module: wasm.Builtin, Name: c.app, Args: c.args, WorkDir: dir, Wall: time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", c.app, err)
		}
		if !bytes.Equal(out.Output, wantOut) || out.ExitCode != wantExit || !strings.Contains(out.Stderr, wantErr) {
			t.Errorf("%s %q: module gave exit %d, %q, stderr %q; native exit %d, %q, %q",
				c.app, c.args, out.ExitCode, out.Output, out.Stderr, wantExit, wantOut, wantErr)
		}
	}
	out, err := s.Run(context.Background(), sandbox.Task{Module: wasm.Builtin, Name: "no-such-app", WorkDir: t.TempDir(), Wall: time.Minute})
	if err != nil || out.ExitCode != 127 {
		t.Fatalf("unknown app: exit %d, %v; want 127", out.ExitCode, err)
	}
}

// native runs a built-in in-process in dir and returns its stdout, and
// the exit code and error text `up app exec` would give.
func native(t *testing.T, app string, args []string, dir string) ([]byte, int, string) {
	t.Helper()
	a, ok := apps.Lookup(app)
	if !ok {
		t.Fatalf("no built-in %q", app)
	}
	var buf bytes.Buffer
	err := a.Main(args, &buf, dir)
	var ee apps.ExitError
	switch {
	case err == nil:
		return buf.Bytes(), 0, ""
	case errors.As(err, &ee):
		return buf.Bytes(), ee.Code, ""
	default:
		return buf.Bytes(), 1, err.Error()
	}
}

// TestBuiltinModuleUpToDate rebuilds the module from the source in this
// tree with the Go release that built builtin.wasm, and wants the same
// bytes: a change to package apps without `go generate ./apps/wasm` fails
// here. It skips without a go tool or with another Go release (the build
// is reproducible only with the same one).
func TestBuiltinModuleUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the module")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool on PATH")
	}
	have, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(have)) != strings.TrimSpace(wasm.GoVersion) {
		t.Skipf("builtin.wasm was built with %s, this is %s", strings.TrimSpace(wasm.GoVersion), strings.TrimSpace(string(have)))
	}
	out := filepath.Join(t.TempDir(), "builtin.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s", "-o", out, "./builtin")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wasm.Builtin) {
		t.Fatalf("builtin.wasm (%d bytes) is not what this tree builds (%d bytes): run go generate ./apps/wasm", len(wasm.Builtin), len(got))
	}
}
