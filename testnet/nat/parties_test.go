package nat_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/up-pool/up/testnet/nat"
)

// world is a topology with the up binary, a CA and the parties' data
// directories under one scratch directory.
type world struct {
	t   *testing.T
	net *nat.Net
	bin string // the up binary
	dir string // scratch: data directories, logs, job files
	// upnp: the topology has the UPnP router r4 and its node.
	upnp bool
}

var (
	buildOnce sync.Once
	upPath    string
	buildErr  error
)

// upBinary builds cmd/up once per test process.
func upBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "up-nat-bin")
		if err != nil {
			buildErr = err
			return
		}
		upPath = filepath.Join(dir, "up")
		out, err := exec.Command("go", "build", "-o", upPath, "github.com/up-pool/up/cmd/up").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build cmd/up: %w: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return upPath
}

// up runs the up binary with args in host's namespace ("" for this one)
// and returns its standard output; a failure fails the test.
func (w *world) up(host string, args ...string) []byte {
	w.t.Helper()
	out, err := w.tryUp(host, args...)
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// tryUp is up returning the error instead.
func (w *world) tryUp(host string, args ...string) ([]byte, error) {
	var c *exec.Cmd
	if host == "" {
		c = exec.Command(w.bin, args...)
	} else {
		c = w.net.Command(host, w.bin, args...)
	}
	c.Dir = w.dir
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return out, fmt.Errorf("up %s (in %s): %w: %s", strings.Join(args, " "), host, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// certify makes and certifies a party's data directory named name.
func (w *world) certify(role, name string) {
	w.t.Helper()
	w.up("", role, "init", "--data", name, "--ca", "ca/ca.crt", "--name", name)
	w.up("", "ca", "issue", "--data", "ca", "--role", role, "--in", filepath.Join(name, role+".csr"), "--out", filepath.Join(name, role+".crt"))
}

// daemon is a long-running up process in a namespace.
type daemon struct {
	host, name string
	cmd        *exec.Cmd
	log        string
}

// start runs up with args in host's namespace in the background, its
// standard error in name.log, and stops it (SIGTERM, then kill) at the end
// of the test unless stopped before.
func (w *world) start(host, name string, args ...string) *daemon {
	w.t.Helper()
	d := &daemon{host: host, name: name, log: filepath.Join(w.dir, name+".log")}
	f, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		w.t.Fatal(err)
	}
	d.cmd = w.net.Command(host, w.bin, args...)
	d.cmd.Dir = w.dir
	d.cmd.Stdout, d.cmd.Stderr = f, f
	if err := d.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	f.Close()
	w.t.Cleanup(d.stop)
	return d
}

// stop ends the daemon gracefully (SIGTERM, 10 s), then kills it.
func (d *daemon) stop() {
	if d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
	}
}

// tail is the end of the daemon's log, for a failure's message.
func (d *daemon) tail() string {
	b, _ := os.ReadFile(d.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// nodeStatus is the part of a node's /status the tests read.
type nodeStatus struct {
	PeerID       string   `json:"peer_id"`
	Addrs        []string `json:"addrs"`
	RoutingPeers []string `json:"routing_peers"`
	JobsHeld     int      `json:"jobs_held"`
	IndexEntries int      `json:"index_entries"`
	DHTServer    bool     `json:"dht_server"`
	Reach        struct {
		Reachability string   `json:"reachability"`
		Why          string   `json:"why"`
		Addrs        []string `json:"addrs"`
		Relayed      bool     `json:"relayed"`
		Mapped       []string `json:"mapped_addrs"`
		HolePunched  int      `json:"hole_punched"`
	} `json:"reachability"`
}

// nodeStatus reads the status of the node running in host.
func (w *world) nodeStatus(host string) (nodeStatus, error) {
	var st nodeStatus
	out, err := w.tryUp(host, "node", "status", "--http", "127.0.0.1:8040", "--json")
	if err == nil {
		err = json.Unmarshal(out, &st)
	}
	return st, err
}

// await polls cond every second until it holds or timeout passes; it
// fails the test with what cond last said.
func (w *world) await(timeout time.Duration, what string, cond func() (bool, string)) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s: not after %s: %s", what, timeout, last)
		}
		time.Sleep(time.Second) // other processes' state: polled through their APIs
	}
}

// keepLogs copies every log of the run to $UP_NAT_LOGS when it is set.
func (w *world) keepLogs() {
	dst := os.Getenv("UP_NAT_LOGS")
	if dst == "" {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(w.dir, "*.log"))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		w.t.Error(err)
		return
	}
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil {
			_ = os.WriteFile(filepath.Join(dst, filepath.Base(l)), b, 0o644)
		}
	}
}
