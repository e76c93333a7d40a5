package browser_test

import (
	"context"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/browser"
)

// wait bounds what a page must show after a poll or two.
const wait = 20 * time.Second

// startNodes starts a small in-process network whose node 0 serves its
// HTTP API on 127.0.0.1, sampling its series every 200 ms.
func startNodes(t *testing.T, nodes int) *testnet.Network {
	t.Helper()
	tn, err := testnet.Start(context.Background(), testnet.Options{
		Nodes: nodes, Dir: t.TempDir(), Seed: 31,
		Configure: func(i int, cfg *node.Config) {
			if i == 0 {
				cfg.HTTPAddr = "127.0.0.1:0"
				cfg.SeriesStep = 200 * time.Millisecond
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tn.Close() })
	return tn
}

// noConsoleErrors fails t on the page's console errors (a script error,
// a refused load, a CSP violation).
func noConsoleErrors(t *testing.T, b *browser.Browser) {
	t.Helper()
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

// TestNodeStatusInBrowser: Chromium opens a node's /status from its HTTP
// API on 127.0.0.1 and shows the node's JSON.
func TestNodeStatusInBrowser(t *testing.T) {
	b := browser.Start(t)
	nd := startNodes(t, 3).Node(0)
	b.Open("http://" + nd.HTTPAddr() + "/status")
	b.WaitText("body", func(s string) bool {
		return strings.Contains(s, `"role": "node"`) && strings.Contains(s, nd.ID().String())
	}, wait)
	b.Snapshot("node-status")
	noConsoleErrors(t, b)
}

// TestNodePage: the node's page shows its peer ID and reachability, its
// neighbours on the ring and close up, its holdings, load, moves and
// connections as charts, the requests it served by protocol, its peers
// by role, and the serials its revocation list revokes, as they change.
func TestNodePage(t *testing.T) {
	b := browser.Start(t)
	const nodes = 6
	tn := startNodes(t, nodes)
	nd := tn.Node(0)
	b.Open("http://" + nd.HTTPAddr() + "/")
	b.WaitText("#n-peer", func(s string) bool { return s == nd.ID().String() }, wait)
	b.WaitMatch("#n-reach", regexp.MustCompile(`reachab`), wait)
	b.WaitCount("#n-ring .ring-self", 1, wait)
	b.WaitCount("#n-ring .ring-peer", nodes-1, wait)
	b.WaitCount("#n-zoom .ring-peer", nodes-1, wait)
	b.WaitCount("#n-neighbours tbody tr", nodes-1, wait)
	b.WaitMatch("#n-admitted", regexp.MustCompile(`node\s+\d`), wait)
	b.WaitCount("#n-routing tbody tr", 1, wait)
	b.WaitText("#n-revoked", func(s string) bool { return strings.Contains(s, "no certificate revoked") }, wait)

	// Requests served show by protocol, in the table and the chart.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	self := keyspace.PeerPos([]byte(nd.ID()))
	for range 5 {
		if _, err := tn.Node(1).DHT().Near(ctx, nd.ID(), self, 3); err != nil {
			t.Fatal(err)
		}
	}
	b.WaitMatch("#n-rpc", regexp.MustCompile(`/up/near/`), wait)
	for _, chart := range []string{"#n-holdings", "#n-loadchart", "#n-moveschart", "#n-connchart", "#n-rpcchart"} {
		b.WaitCount(chart+" polyline", 1, wait)
	}

	// A new revocation list shows its serials.
	rl, err := tn.CA.Revoke(nil, []*big.Int{big.NewInt(0x2a), big.NewInt(0xbeef)}, time.Now().Add(-time.Minute), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	nd.Endpoint().AdoptCRL(rl)
	b.WaitText("#n-revoked", func(s string) bool { return strings.Contains(s, "2a") && strings.Contains(s, "beef") }, wait)
	b.WaitText("#n-revcount", func(s string) bool { return s == "2" }, wait)
	b.Snapshot("node-page")
	noConsoleErrors(t, b)
}
