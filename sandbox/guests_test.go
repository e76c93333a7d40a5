package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/sandbox"
)

// guestPackages are the Go programs the tests run as WebAssembly modules:
// the test guests and the built-in applications' WebAssembly commands.
var guestPackages = []string{"./testdata/guests/...", "github.com/up-pool/up/apps/wasm/..."}

// guestBuild is the one build of guestPackages per test binary run.
var guestBuild struct {
	once    sync.Once
	dir     string
	modules map[string][]byte // by command name
	err     error
	skip    string
}

// TestMain removes the guests' build directory after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if guestBuild.dir != "" {
		os.RemoveAll(guestBuild.dir)
	}
	if sharedCache.dir != "" {
		os.RemoveAll(sharedCache.dir)
	}
	os.Exit(code)
}

// guest returns the WebAssembly module of the named command (a directory
// of testdata/guests or apps/wasm), building them all on first use; it
// skips the test if the go tool is not on PATH.
func guest(tb testing.TB, name string) []byte {
	tb.Helper()
	guestBuild.once.Do(buildGuests)
	if guestBuild.skip != "" {
		tb.Skip(guestBuild.skip)
	}
	if guestBuild.err != nil {
		tb.Fatal(guestBuild.err)
	}
	m, ok := guestBuild.modules[name]
	if !ok {
		tb.Fatalf("no guest %q was built", name)
	}
	return m
}

// buildGuests compiles guestPackages with GOOS=wasip1 GOARCH=wasm into a
// temporary directory and reads the modules.
func buildGuests() {
	g := &guestBuild
	if _, err := exec.LookPath("go"); err != nil {
		g.skip = "go tool not on PATH: cannot build the WebAssembly test guests"
		return
	}
	if g.dir, g.err = os.MkdirTemp("", "sandbox-guests-"); g.err != nil {
		return
	}
	g.err = goBuildWasm(g.dir+string(filepath.Separator), guestPackages...)
	if g.err != nil {
		return
	}
	entries, err := os.ReadDir(g.dir)
	if err != nil {
		g.err = err
		return
	}
	g.modules = map[string][]byte{}
	for _, e := range entries {
		if g.modules[e.Name()], err = os.ReadFile(filepath.Join(g.dir, e.Name())); err != nil {
			g.err = err
			return
		}
	}
}

// goBuildWasm runs `go build -trimpath -o out pkgs...` for wasip1/wasm.
func goBuildWasm(out string, pkgs ...string) error {
	args := append([]string{"build", "-trimpath", "-o", out}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %v: %w\n%s", args, err, stderr.Bytes())
	}
	return nil
}

// sharedCache is the compilation cache of the sandboxes the tests make
// without one of their own: each guest is compiled once per test binary
// run, not once per test (compiling a Go guest takes seconds, tens of
// seconds under the race detector).
var sharedCache struct {
	once sync.Once
	dir  string
	err  error
}

// newSandbox returns a Sandbox closed at the end of the test, with the
// shared compilation cache unless cfg names one.
func newSandbox(tb testing.TB, cfg sandbox.Config) *sandbox.Sandbox {
	tb.Helper()
	if cfg.CacheDir == "" {
		sharedCache.once.Do(func() { sharedCache.dir, sharedCache.err = os.MkdirTemp("", "sandbox-cache-") })
		if sharedCache.err != nil {
			tb.Fatal(sharedCache.err)
		}
		cfg.CacheDir = sharedCache.dir
	}
	s, err := sandbox.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// run runs t (Wall 30 s and a fresh WorkDir unless set) and fails the test
// on a Run error.
func run(tb testing.TB, s *sandbox.Sandbox, t sandbox.Task) sandbox.Outcome {
	tb.Helper()
	if t.Wall == 0 {
		t.Wall = 30 * time.Second
	}
	if t.WorkDir == "" {
		t.WorkDir = tb.TempDir()
	}
	out, err := s.Run(context.Background(), t)
	if err != nil {
		tb.Fatalf("Run(%q): %v", t.Args, err)
	}
	return out
}

// Hand-assembled WebAssembly modules, for what a Go guest cannot do (trap)
// or to measure the sandbox without a Go runtime's start-up.
var (
	// tinyNoop's _start returns at once.
	tinyNoop = tinyModule(-1, 0x0b)
	// tinyTrap's _start executes unreachable.
	tinyTrap = tinyModule(-1, 0x00, 0x0b)
	// tinyLoop's _start loops forever.
	tinyLoop = tinyModule(-1, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b)
	// tinyBigMemory declares a 64-page (4 MiB) minimum memory.
	tinyBigMemory = tinyModule(64, 0x0b)
)

// tinyModule assembles a module with one function, exported as _start,
// whose body (without locals) is code; with a memory of minPages (< 128)
// pages if minPages >= 0.
func tinyModule(minPages int, code ...byte) []byte {
	section := func(id byte, content ...byte) []byte {
		return append([]byte{id, byte(len(content))}, content...)
	}
	m := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, 0x01, 0x60, 0x00, 0x00)...) // type 0: () -> ()
	m = append(m, section(3, 0x01, 0x00)...)             // function 0 has type 0
	if minPages >= 0 {
		m = append(m, section(5, 0x01, 0x00, byte(minPages))...) // memory: min only
	}
	m = append(m, section(7, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00)...)
	body := append([]byte{0x00}, code...) // no locals
	m = append(m, section(10, append([]byte{0x01, byte(len(body))}, body...)...)...)
	return m
}
