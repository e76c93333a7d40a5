package testnet_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/testnet"
)

// TestRestartKeepsIdentityAndRejoins: over loopback TCP, a node stopped and
// restarted on its data directory has the same peer ID, rejoins through
// the peers it remembered, and is found by lookups again.
func TestRestartKeepsIdentityAndRejoins(t *testing.T) {
	for _, tr := range []struct {
		name string
		t    testnet.Transport
	}{{"tcp", testnet.TCP}, {"mocknet", testnet.Mocknet}} {
		t.Run(tr.name, func(t *testing.T) {
			net := testnet.StartNetwork(t, testnet.Options{Nodes: 8, Seed: 11, Transport: tr.t})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			const i = 3
			before := net.Node(i).ID()
			if err := net.Kill(i); err != nil {
				t.Fatal(err)
			}
			if err := net.Restart(ctx, i); err != nil {
				t.Fatalf("restart: %v", err)
			}
			nd := net.Node(i)
			if nd.ID() != before {
				t.Fatalf("restarted with peer ID %s, was %s", nd.ID(), before)
			}
			if nd.DHT().RoutingTableSize() == 0 {
				t.Fatal("restarted node has an empty routing table")
			}
			// Every other node finds the restarted node among the closest
			// to a key right at its position.
			key := []byte(nd.ID())
			for _, other := range net.Live() {
				if other == nd {
					continue
				}
				other.DHT().Invalidate(key)
				got, err := other.DHT().ClosestPeers(ctx, key)
				if err != nil {
					t.Fatalf("%s lookup: %v", other.Name(), err)
				}
				want := net.TrueClosest(key, 5)
				if !equalIDs(got, want) {
					t.Fatalf("%s: closest after restart %v, want %v", other.Name(), got, want)
				}
			}
		})
	}
}

// TestRestartRefreshesWithOneNearQuestion: a restarted node that
// remembers its peers refreshes its neighbourhood with one near question
// to the nearest of them it reached (node.refreshNeighbours), not a
// lookup of its own position (some 20 FIND_NODE requests): its join
// costs one lookup RPC, and its routing table then holds its true
// nearest nodes. A node joining for the first time still looks itself up.
func TestRestartRefreshesWithOneNearQuestion(t *testing.T) {
	var mu sync.Mutex
	joinRPCs := int64(0)
	opts := testnet.Options{Nodes: 24, Seed: 13}
	opts.DHT.OnLookup = func(purpose string, rpcs int64) {
		if purpose == "join" {
			mu.Lock()
			joinRPCs += rpcs
			mu.Unlock()
		}
	}
	net := testnet.StartNetwork(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const i = 5
	if err := net.Kill(i); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	joinRPCs = 0
	mu.Unlock()
	if err := net.Restart(ctx, i); err != nil {
		t.Fatalf("restart: %v", err)
	}
	mu.Lock()
	got := joinRPCs
	mu.Unlock()
	if got != 1 {
		t.Fatalf("the restart's join cost %d lookup RPCs, want 1 (a near question)", got)
	}
	nd := net.Node(i)
	rt := nd.DHT().RoutingTablePeers()
	for _, p := range net.TrueClosest([]byte(nd.ID()), 6) {
		if p != nd.ID() && !slices.Contains(rt, p) {
			t.Fatalf("restarted node's routing table lacks %s, one of its nearest", p)
		}
	}
}
