package sandbox_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/experimental/sock"
	"github.com/up-pool/up/sandbox"
)

// TestGuestSeesOnlyItsInputs checks a guest's view: its arguments and
// stdin, no environment (the host's is not inherited), "/" as its current
// directory, and the fixed clock.
func TestGuestSeesOnlyItsInputs(t *testing.T) {
	t.Setenv("UP_SANDBOX_TEST_SECRET", "host environment")
	s := newSandbox(t, sandbox.Config{})
	out := run(t, s, sandbox.Task{Module: guest(t, "echo"), Name: "echo", Args: []string{"a", "b c"}, Stdin: []byte("in\n")})
	want := []string{
		`args: ["a" "b c"]`,
		`env: []`,
		`cwd: /`,
		`stdin: "in\n"`,
		`time: 2022-01-01T00:00:00Z, slept `, // wazero's fixed wall clock
	}
	for _, w := range want {
		if !strings.Contains(string(out.Output), w+"") {
			t.Errorf("output lacks %q:\n%s", w, out.Output)
		}
	}
	if out.ExitCode != 0 || out.Stderr != "echo: done\n" {
		t.Errorf("exit %d, stderr %q", out.ExitCode, out.Stderr)
	}
}

// TestDeterministic runs the same module with the same inputs in two
// sandboxes: the outputs, random bytes and clock readings included, are
// the same bytes.
func TestDeterministic(t *testing.T) {
	task := sandbox.Task{Module: guest(t, "echo"), Args: []string{"x"}, Stdin: []byte("same")}
	first := run(t, newSandbox(t, sandbox.Config{}), task)
	second := run(t, newSandbox(t, sandbox.Config{}), task)
	if string(first.Output) != string(second.Output) {
		t.Errorf("two runs differ:\n%s\n%s", first.Output, second.Output)
	}
	if !strings.Contains(string(first.Output), "rand: ") {
		t.Errorf("no random bytes in %q", first.Output)
	}
}

// TestWriteInWorkDir: what the guest writes lands in the work dir.
func TestWriteInWorkDir(t *testing.T) {
	s := newSandbox(t, sandbox.Config{})
	dir := t.TempDir()
	out := run(t, s, sandbox.Task{Module: guest(t, "files"), Args: []string{"write", "/out.txt", "written"}, WorkDir: dir})
	if out.ExitCode != 0 {
		t.Fatalf("exit %d: %s", out.ExitCode, out.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "written" {
		t.Errorf("out.txt: %q, %v", b, err)
	}
}

// TestRunErrors lists the tasks Run refuses with an error: the caller's
// mistakes, not the guest's.
func TestRunErrors(t *testing.T) {
	s := newSandbox(t, sandbox.Config{})
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFile(t, file, "")
	withLink := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(withLink, "passwd")); err != nil {
		t.Fatal(err)
	}
	withSocket := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(withSocket, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ok := sandbox.Task{Module: tinyNoop, WorkDir: dir, Wall: time.Second}
	cases := []struct {
		name string
		edit func(*sandbox.Task)
		want string
	}{
		{"no wall-clock limit", func(t *sandbox.Task) { t.Wall = 0 }, "wall-clock limit 0s is not positive"},
		{"memory over 4 GiB", func(t *sandbox.Task) { t.Memory = 5 << 30 }, "memory limit 5368709120 is outside"},
		{"no work dir", func(t *sandbox.Task) { t.WorkDir = "" }, "task has no WorkDir"},
		{"missing work dir", func(t *sandbox.Task) { t.WorkDir = filepath.Join(dir, "absent") }, "no such file or directory"},
		{"work dir is a file", func(t *sandbox.Task) { t.WorkDir = file }, "is not a directory"},
		{"work dir holds a symlink", func(t *sandbox.Task) { t.WorkDir = withLink }, "passwd is a symbolic link"},
		{"work dir holds a socket", func(t *sandbox.Task) { t.WorkDir = withSocket }, "sock is neither a regular file nor a directory"},
		{"module does not match its ID", func(t *sandbox.Task) { t.ModuleID = sha256.Sum256([]byte("other")) }, "module bytes have SHA-256"},
		{"neither module nor ID", func(t *sandbox.Task) { t.Module = nil }, "neither Module nor ModuleID"},
		{"ID of a module not loaded", func(t *sandbox.Task) { t.Module, t.ModuleID = nil, sha256.Sum256([]byte("other")) }, "is not loaded"},
	}
	for _, c := range cases {
		task := ok
		c.edit(&task)
		_, err := s.Run(context.Background(), task)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "sandbox: ") {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := s.Run(context.Background(), ok); err != nil {
		t.Errorf("the valid task: %v", err)
	}
	s.Close()
	if _, err := s.Run(context.Background(), ok); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("after Close: %v", err)
	}
}

// TestModuleByID runs a loaded module by its ID alone.
func TestModuleByID(t *testing.T) {
	s := newSandbox(t, sandbox.Config{})
	id := sha256.Sum256(tinyNoop)
	if s.Loaded(id, 0) {
		t.Fatal("loaded before any run")
	}
	run(t, s, sandbox.Task{Module: tinyNoop, ModuleID: id})
	if !s.Loaded(id, 0) || s.Loaded(id, 1<<20) {
		t.Errorf("Loaded: %v under the default limit (want true), %v under 1 MiB (want false)", s.Loaded(id, 0), s.Loaded(id, 1<<20))
	}
	if out := run(t, s, sandbox.Task{ModuleID: id}); out.ExitCode != 0 {
		t.Errorf("by ID: exit %d: %s", out.ExitCode, out.Stderr)
	}
}

// TestContextEnds: a run whose context ends stops at once and says so in
// the error, not as a Killed reason.
func TestContextEnds(t *testing.T) {
	s := newSandbox(t, sandbox.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	out, err := s.Run(ctx, sandbox.Task{Module: tinyLoop, WorkDir: t.TempDir(), Wall: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) || out.Killed != "" || out.ExitCode != sandbox.ExitKilled {
		t.Errorf("err %v, killed %q, exit %d; want context.DeadlineExceeded, \"\", %d", err, out.Killed, out.ExitCode, sandbox.ExitKilled)
	}
	if out.Wall > 50*time.Second { // well under the minute of Wall: the context stopped it
		t.Errorf("took %v", out.Wall)
	}
}

// TestConcurrentRuns runs modules from several goroutines, with two memory
// limits (two runtimes sharing compiled code) and room for one loaded
// module only, so runs wait for a compilation and modules are dropped and
// reloaded.
func TestConcurrentRuns(t *testing.T) {
	hog, echo := guest(t, "hog"), guest(t, "echo")
	s := newSandbox(t, sandbox.Config{MaxLoaded: 1})
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 8 {
		wg.Go(func() {
			task := sandbox.Task{Module: hog, Args: []string{"alloc", "16"}, WorkDir: t.TempDir(), Wall: time.Minute}
			want, killed := "allocated 16 MiB\n", ""
			switch i % 4 {
			case 1: // the same module under a limit it cannot meet
				task.Memory, want, killed = 12<<20, "", sandbox.KilledMemory
			case 2:
				task = sandbox.Task{Module: echo, Args: []string{"x"}, WorkDir: t.TempDir(), Wall: time.Minute}
				want = ""
			}
			out, err := s.Run(context.Background(), task)
			if err != nil || out.Killed != killed || (want != "" && string(out.Output) != want) {
				errs <- strings.Join([]string{task.Args[0], out.Killed, string(out.Output), out.Stderr}, " | ")
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestCacheDir: a second Sandbox on the same CacheDir finds the compiled
// code there.
func TestCacheDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	task := sandbox.Task{Module: guest(t, "noop")}
	first := run(t, newSandbox(t, sandbox.Config{CacheDir: dir}), task)
	second := run(t, newSandbox(t, sandbox.Config{CacheDir: dir}), task)
	if first.ExitCode != 0 || second.ExitCode != 0 {
		t.Fatalf("exits %d, %d", first.ExitCode, second.ExitCode)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("cache dir: %v entries, %v", len(entries), err)
	}
	t.Logf("compile %v, load from the cache dir %v", first.Load, second.Load)
	if second.Load > first.Load/2 {
		t.Errorf("loading from the cache dir took %v, compiling %v", second.Load, first.Load)
	}
}

// TestCompileNotCharged: compiling a module does not count against the
// task's wall-clock limit (a Go guest takes far longer to compile than
// this limit; running it, far less).
func TestCompileNotCharged(t *testing.T) {
	s := newSandbox(t, sandbox.Config{CacheDir: t.TempDir()}) // its own cache: the module is compiled here
	out := run(t, s, sandbox.Task{Module: guest(t, "noop"), Wall: 300 * time.Millisecond})
	if out.ExitCode != 0 || out.Killed != "" {
		t.Errorf("exit %d, killed %q after loading for %v: %s", out.ExitCode, out.Killed, out.Load, out.Stderr)
	}
	t.Logf("load %v, run %v", out.Load, out.Wall)
}

// TestCallerContextLendsNoSockets: wazero hands a guest the TCP listeners
// found in the context (experimental/sock.WithConfig); Run keeps the
// caller's context values away from the guest, so it gets none.
func TestCallerContextLendsNoSockets(t *testing.T) {
	s := newSandbox(t, sandbox.Config{})
	ctx := sock.WithConfig(context.Background(), sock.NewConfig().WithTCPListener("127.0.0.1", 0))
	for _, fd := range []string{"3", "4"} {
		out, err := s.Run(ctx, sandbox.Task{Module: guest(t, "net"), Args: []string{"accept", fd}, WorkDir: t.TempDir(), Wall: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if out.ExitCode != 1 || !strings.Contains(out.Stderr, "errno 8 (EBADF)") {
			t.Errorf("accept on descriptor %s: exit %d, stderr %q; want exit 1, EBADF", fd, out.ExitCode, out.Stderr)
		}
	}
}
