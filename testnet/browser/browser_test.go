package browser_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/browser"
)

// TestNodeStatusInBrowser: Chromium opens a node's /status from its HTTP
// API on 127.0.0.1 and shows the node's JSON.
func TestNodeStatusInBrowser(t *testing.T) {
	b := browser.Start(t)
	tn, err := testnet.Start(context.Background(), testnet.Options{
		Nodes: 3, Dir: t.TempDir(), Seed: 31,
		Configure: func(i int, cfg *node.Config) {
			if i == 0 {
				cfg.HTTPAddr = "127.0.0.1:0"
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	nd := tn.Node(0)
	b.Open("http://" + nd.HTTPAddr() + "/status")
	b.WaitText("body", func(s string) bool {
		return strings.Contains(s, `"role": "node"`) && strings.Contains(s, nd.ID().String())
	}, 10*time.Second)
	b.Snapshot("node-status")
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
