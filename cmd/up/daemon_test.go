package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/testnet/testkit"
)

// child is an up command running in a process of its own.
type child struct {
	cmd      *exec.Cmd
	out, err *lines
	done     chan error
}

// startChild starts the command line in a child process; stdout and
// stderr are watched for outRe and errRe. The child is killed at the end
// of the test if still running.
func startChild(t *testing.T, outRe, errRe string, args ...string) *child {
	t.Helper()
	cmd := upCommand(args...)
	stdout, outW := io.Pipe()
	stderr, errW := io.Pipe()
	cmd.Stdout, cmd.Stderr = outW, errW
	c := &child{cmd: cmd, out: watch(stdout, regexp.MustCompile(outRe)), err: watch(stderr, regexp.MustCompile(errRe)), done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	go func() {
		err := cmd.Wait()
		outW.Close()
		errW.Close()
		c.done <- err
	}()
	return c
}

// stop sends SIGTERM and returns the exit error, failing after d.
func (c *child) stop(t *testing.T, d time.Duration) error {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		return err
	case <-time.After(d):
		t.Fatalf("still running %s after SIGTERM; stderr: %s", d, c.err)
	}
	return nil
}

// clientDir makes and certifies a client's data directory in f.
func clientDir(t *testing.T, f fixture, name string) string {
	t.Helper()
	w := filepath.Join(f.dir, name)
	mustRun(t, "client", "init", "--data", w, "--ca", filepath.Join(f.ca, "ca.crt"), "--name", name)
	mustRun(t, "ca", "issue", "--dir", f.ca, "--role", "client", "--in", filepath.Join(w, "client.csr"), "--out", filepath.Join(w, "client.crt"))
	return w
}

// freeAddr is a loopback TCP multiaddr nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", ln.Addr().(*net.TCPAddr).Port)
}

// TestClientRunWaitsForItsNode: a client started before its bootstrap
// node keeps retrying, says so, and starts working once the node is up.
func TestClientRunWaitsForItsNode(t *testing.T) {
	f := newFixture(t)
	w1 := clientDir(t, f, "w1")
	id, err := keystore.Load(f.n1, certs.RoleNode, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	listen := freeAddr(t)
	cl := startChild(t, `^$`, `(retrying until stopped|client started)`,
		"client", "run", "--data", w1, "--bootstrap", listen+"/p2p/"+id.PeerID.String(), "--project", "lhc", "--slots", "1")
	if got := cl.err.await(t, 30*time.Second, "a retry in the client's log"); got != "retrying until stopped" {
		t.Fatalf("client logged %q before its node was up: %s", got, cl.err)
	}
	nd := startChild(t, `^listening on (\S+)`, `^$`, "node", "run", "--data", f.n1, "--listen", listen)
	nd.out.await(t, 30*time.Second, `the node's "listening on" line`)
	if !testkit.Poll(30*time.Second, func() bool { return strings.Contains(cl.err.String(), "client started") }) {
		t.Fatalf("no \"client started\" 30 s after its node came up: %s", cl.err)
	}
	if err := cl.stop(t, 15*time.Second); err != nil {
		t.Fatalf("client exit: %v; stderr: %s", err, cl.err)
	}
	if err := nd.stop(t, 15*time.Second); err != nil {
		t.Fatalf("node exit: %v", err)
	}
}

// TestClientRunRevokedExits: a client whose certificate its node has
// revoked is told why and exits 1 at once, instead of looping on jobs it
// cannot reach.
func TestClientRunRevokedExits(t *testing.T) {
	f := newFixture(t)
	w1 := clientDir(t, f, "w1")
	mustRun(t, "ca", "revoke", "--dir", f.ca, "--cert", filepath.Join(w1, "client.crt"))
	copyFile(t, filepath.Join(f.ca, "crl.pem"), filepath.Join(f.n1, "crl.pem"))
	nd := startChild(t, `^listening on (\S+)`, `^$`, "node", "run", "--data", f.n1, "--listen", "/ip4/127.0.0.1/tcp/0")
	addr := nd.out.await(t, 30*time.Second, `the node's "listening on" line`)
	cl := startChild(t, `^$`, `^$`, "client", "run", "--data", w1, "--bootstrap", addr, "--project", "lhc", "--slots", "1")
	var err error
	select {
	case err = <-cl.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("a revoked client still runs after 20 s; stderr: %s", cl.err)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("revoked client: %v, want exit 1; stderr: %s", err, cl.err)
	}
	for range cl.err.got { // drained: every line read
	}
	if s := cl.err.String(); !strings.Contains(s, "certificate revoked") || strings.Contains(s, "client started") {
		t.Fatalf("revoked client's stderr does not say it is revoked: %s", s)
	}
	if err := nd.stop(t, 15*time.Second); err != nil {
		t.Fatalf("node exit: %v", err)
	}
}
