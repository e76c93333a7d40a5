package nat_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/up-pool/up/testnet/nat"
)

// needNamespaces skips the test, saying why, where namespaces cannot be
// built (not root, no ip or iptables, a kernel that refuses them).
func needNamespaces(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short: builds network namespaces and runs real processes")
	}
	if err := nat.Available(); err != nil {
		t.Skipf("NAT topology skipped: %v", err)
	}
}

// build builds spec with a prefix unique to this process and test, and
// removes it at the end of the test.
func build(t *testing.T, tag string, spec nat.Spec) *nat.Net {
	t.Helper()
	n, err := nat.Build(fmt.Sprintf("up%d%s", os.Getpid()%100000, tag), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startEcho runs the echo helper in host's namespace on port 7000.
func startEcho(t *testing.T, n *nat.Net, host string) {
	t.Helper()
	c := n.Command(host, self(t), "-test.run=^$", "echo", "-", "7000")
	c.Env = append(os.Environ(), helperEnv+"=echo")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
}

// dial runs the dial helper in host's namespace against to's echo server.
func dial(t *testing.T, n *nat.Net, host, to string, localPort, rounds int) dialReport {
	t.Helper()
	addr := net.JoinHostPort(n.Addr(to), "7000")
	var rep dialReport
	var err error
	for range 50 { // the echo server may not listen yet
		c := n.Command(host, self(t), "-test.run=^$", addr, fmt.Sprint(localPort), fmt.Sprint(rounds))
		c.Env = append(os.Environ(), helperEnv+"=dial")
		var out []byte
		if out, err = c.Output(); err == nil {
			if err = json.Unmarshal(out, &rep); err == nil {
				return rep
			}
		}
		time.Sleep(100 * time.Millisecond) // another process's listener: no event to await
	}
	t.Fatalf("dial %s from %s: %v", addr, host, err)
	return rep
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestTopologyNATAndDelay checks the topology itself: home hosts reach
// the public segment through their router's public address; a cone
// router keeps the source port and a symmetric one does not (the
// negative control of the cone check); the delay stage adds its round
// trip and removing it takes it away.
func TestTopologyNATAndDelay(t *testing.T) {
	needNamespaces(t)
	n := build(t, "t", nat.Spec{
		Public: []string{"srv"},
		Routers: []nat.Router{
			{Name: "cone", Kind: nat.Cone, Homes: []string{"hc"}},
			{Name: "sym", Kind: nat.Symmetric, Homes: []string{"hs"}},
		},
	})
	startEcho(t, n, "srv")
	for _, tc := range []struct {
		home, router string
		keepsPort    bool
	}{{"hc", "cone", true}, {"hs", "sym", false}} {
		rep := dial(t, n, tc.home, "srv", 40123, 1)
		host, port, err := net.SplitHostPort(rep.Seen)
		if err != nil {
			t.Fatal(err)
		}
		if host != n.Addr(tc.router) {
			t.Errorf("%s seen from %s, want its router's public address %s", tc.home, host, n.Addr(tc.router))
		}
		if (port == "40123") != tc.keepsPort {
			t.Errorf("%s behind a %s router seen from port %s (local 40123)", tc.home, tc.router, port)
		}
	}
	if m := median(dial(t, n, "hc", "srv", 0, 20).RTTs); m > 20 {
		t.Errorf("round trip %.1f ms with no delay stage", m)
	}
	if err := n.StartDelay(self(t), nat.Delay{OneWay: 40 * time.Millisecond, Jitter: 10 * time.Millisecond, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if m := median(dial(t, n, "hc", "srv", 0, 20).RTTs); m < 60 || m > 110 {
		t.Errorf("round trip %.1f ms through the delay stage, want about 80", m)
	}
	n.StopDelay()
	if m := median(dial(t, n, "hc", "srv", 0, 20).RTTs); m > 20 {
		t.Errorf("round trip %.1f ms after the delay stage stopped", m)
	}
}
