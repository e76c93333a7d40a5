package sandbox_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/sandbox"
)

// tableOutput is the output bound of the table's sandbox, in bytes.
const tableOutput = 1 << 20

// behaviour is one row of TestRefusals: a guest that tries something and
// what the Outcome must say.
type behaviour struct {
	name   string
	guest  string // a testdata/guests command; or
	module []byte // a hand-assembled module
	args   []string
	memory int64         // 0: the default, 256 MiB
	wall   time.Duration // 0: 30 s
	// The Outcome wanted: its exit code and Killed reason, a substring of
	// its Stderr and, if set, its exact Output.
	exit   int
	killed string
	stderr string
	output *string
}

func ptr(s string) *string { return &s }

// refusals are what a guest must not get away with: each is refused with
// a one-line reason, in the Outcome, never a panic or a Run error.
// {{ADDR}} in args is a TCP listener's address on the host's loopback.
var refusals = []behaviour{
	{name: "read a file above the work dir", guest: "files", args: []string{"read", "../secret"},
		exit: 1, stderr: "files: open ../secret: No such file or directory", output: ptr("")},
	{name: "read a host file by absolute path", guest: "files", args: []string{"read", "/etc/passwd"},
		exit: 1, stderr: "files: open /etc/passwd: No such file or directory", output: ptr("")},
	{name: "read a host file through a symlink the guest makes", guest: "files",
		args: []string{"symlink", "../../../../../../../../etc/passwd", "link"},
		exit: 1, stderr: "files: symlink ../../../../../../../../etc/passwd link: Operation not permitted", output: ptr("")},
	{name: "make a symlink to an absolute host path", guest: "files", args: []string{"symlink", "/etc/passwd", "link"},
		exit: 1, stderr: "Operation not permitted", output: ptr("")},
	{name: "dial a TCP listener on the host's loopback", guest: "net", args: []string{"dial", "{{ADDR}}"},
		exit: 1, stderr: "net: dial tcp {{ADDR}}: ", output: ptr("")},
	{name: "accept a connection on the work dir's descriptor", guest: "net", args: []string{"accept", "3"},
		exit: 1, stderr: "net: sock_accept(3): errno 8 (EBADF)", output: ptr("")},
	{name: "accept a connection on stdin", guest: "net", args: []string{"accept", "0"},
		exit: 1, stderr: "net: sock_accept(0): errno 8 (EBADF)", output: ptr("")},
	{name: "import a socket-opening call (sock_open)", guest: "sockopen",
		exit: sandbox.ExitCannotRun, stderr: `sandbox: cannot run: "sock_open" is not exported in module "wasi_snapshot_preview1"`},
	{name: "allocate past the memory limit", guest: "hog", args: []string{"alloc", "64"}, memory: 32 << 20,
		exit: 2, killed: sandbox.KilledMemory, stderr: "fatal error: out of memory", output: ptr("")},
	{name: "start with more memory than the limit (a Go guest needs 38 pages)", guest: "hog", args: []string{"exit", "0"}, memory: 1 << 20,
		exit: sandbox.ExitCannotRun, killed: sandbox.KilledMemory, stderr: "sandbox: cannot run: compile: section memory: min 38 pages (2 Mi) over limit of 16 pages (1 Mi)"},
	{name: "declare a memory minimum over the limit", module: tinyBigMemory, memory: 1 << 20,
		exit: sandbox.ExitCannotRun, killed: sandbox.KilledMemory, stderr: "over limit of 16 pages"},
	{name: "run past the wall-clock limit (a Go loop)", guest: "hog", args: []string{"spin"}, wall: 300 * time.Millisecond,
		exit: sandbox.ExitKilled, killed: sandbox.KilledWall, stderr: "sandbox: wall-clock limit: stopped after 300ms"},
	{name: "run past the wall-clock limit (a bare wasm loop)", module: tinyLoop, wall: 200 * time.Millisecond,
		exit: sandbox.ExitKilled, killed: sandbox.KilledWall, stderr: "sandbox: wall-clock limit: stopped after 200ms"},
	{name: "write past the output bound", guest: "hog", args: []string{"print", "2000000"},
		exit: sandbox.ExitKilled, killed: sandbox.KilledOutput, stderr: "sandbox: output limit: stdout exceeded 1048576 bytes",
		output: ptr(strings.Repeat("x", tableOutput))},
	{name: "trap", module: tinyTrap,
		exit: sandbox.ExitTrap, stderr: "sandbox: trap: wasm error: unreachable"},
}

// controls are the refusals' negative controls: the same guests doing the
// allowed thing succeed.
var controls = []behaviour{
	{name: "read a file in the work dir", guest: "files", args: []string{"read", "data.txt"}, output: ptr("inside")},
	{name: "read a file in the work dir by absolute path", guest: "files", args: []string{"read", "/data.txt"}, output: ptr("inside")},
	{name: "read a file in the work dir by a path that climbs above the root", guest: "files", args: []string{"read", "../../data.txt"},
		output: ptr("inside")}, // "/.." is "/", as on any system
	{name: "allocate within the memory limit", guest: "hog", args: []string{"alloc", "16"}, memory: 64 << 20, output: ptr("allocated 16 MiB\n")},
	{name: "exit with its own code", guest: "hog", args: []string{"exit", "3"}, exit: 3, output: ptr("")},
	{name: "write up to the output bound", guest: "hog", args: []string{"print", "1048576"}, output: ptr(strings.Repeat("x", tableOutput))},
	{name: "a bare module returns", module: tinyNoop, memory: 1 << 20, output: ptr("")},
}

// TestRefusals runs refusals and controls in one sandbox, each in a work
// dir holding data.txt ("inside") whose parent holds secret ("SECRET").
func TestRefusals(t *testing.T) {
	s := newSandbox(t, sandbox.Config{MaxOutput: tableOutput})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	rows := append(append([]behaviour{}, refusals...), controls...)
	for _, b := range rows {
		t.Run(b.name, func(t *testing.T) {
			module := b.module
			if module == nil {
				module = guest(t, b.guest)
			}
			args := make([]string, len(b.args))
			for i, a := range b.args {
				args[i] = strings.ReplaceAll(a, "{{ADDR}}", addr)
			}
			out := run(t, s, sandbox.Task{Module: module, Args: args, Memory: b.memory, Wall: b.wall, WorkDir: workDir(t)})
			checkOutcome(t, out, b, strings.ReplaceAll(b.stderr, "{{ADDR}}", addr))
		})
	}
	noConnection(t, ln)
}

// workDir makes parent/work holding data.txt, beside parent/secret.
func workDir(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	dir := filepath.Join(parent, "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(parent, "secret"), "SECRET")
	writeFile(t, filepath.Join(dir, "data.txt"), "inside")
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkOutcome compares out with what b wants.
func checkOutcome(t *testing.T, out sandbox.Outcome, b behaviour, stderr string) {
	t.Helper()
	if out.ExitCode != b.exit || out.Killed != b.killed {
		t.Errorf("exit %d, killed %q; want exit %d, killed %q\nstderr: %s", out.ExitCode, out.Killed, b.exit, b.killed, out.Stderr)
	}
	if !strings.Contains(out.Stderr, stderr) {
		t.Errorf("stderr %q does not contain %q", out.Stderr, stderr)
	}
	if b.output != nil && string(out.Output) != *b.output {
		t.Errorf("output %q (%d bytes), want %q (%d bytes)", trunc(out.Output), len(out.Output), trunc([]byte(*b.output)), len(*b.output))
	}
	if bytes.Contains(out.Output, []byte("SECRET")) || bytes.Contains(out.Output, []byte("root:")) {
		t.Errorf("output shows a file outside the work dir: %q", trunc(out.Output))
	}
	if b.stderr == "" && out.Stderr != "" {
		t.Errorf("unexpected stderr %q", out.Stderr)
	}
}

// trunc shortens b for a failure message.
func trunc(b []byte) string {
	if len(b) > 200 {
		return string(b[:100]) + "..." + string(b[len(b)-100:])
	}
	return string(b)
}

// noConnection fails the test if anyone connected to ln.
func noConnection(t *testing.T, ln net.Listener) {
	t.Helper()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Error("the host's listener accepted a connection")
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Error(err)
	}
}
