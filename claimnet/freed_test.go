package claimnet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestFailedClaimServesJobAgain: a client served the only job loses its
// claim (two replicas other than the nearest deny, more than a quorum of
// four of five can spare: another client holds temporary claims there)
// and releases the grant of the nearest. The job
// stays ready, and another client is served it and claims it seconds
// later, not after the 2-min quarantine its index entry got when it was
// served to the first.
func TestFailedClaimServesJobAgain(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 61)
	ctx := context.Background()
	key := cn.keys[0]
	cn.net.FlushAll(ctx)
	nodes := cn.net.TrueClosest(key, 5)

	// Another client holds a temporary claim at the second and third
	// nearest nodes only (as if its own attempt stalled there).
	other, _ := cn.client(t, "other")
	for _, n := range nodes[1:3] {
		var resp wire.ClaimResponse
		if err := other.Endpoint().Call(ctx, n, wire.ProtoClaim, &wire.ClaimRequest{Job: key}, wire.MaxReplyBytes+64, &resp); err != nil {
			t.Fatal(err)
		}
	}

	first, cl1 := cn.client(t, "first")
	hits, err := first.Index().Find(ctx, "lhc", 1)
	if err != nil || len(hits) != 1 {
		t.Fatalf("first client's query: %d hits, %v", len(hits), err)
	}
	if _, err := cl1.ClaimAt(ctx, key, nil, hintOf(hits[0])); !errors.Is(err, claimclient.ErrLost) {
		t.Fatalf("first claim: %v, want it lost to the other temporary claim", err)
	}
	cn.net.FlushAll(ctx) // what the nodes' writers do within a moment

	cn.clock.Advance(16 * time.Second) // the other temporary claim lapses
	second, cl2 := cn.client(t, "second")
	hits, err = second.Index().Find(ctx, "lhc", 1)
	if err != nil || len(hits) != 1 {
		t.Fatalf("16 s after the failed claim, the second client's query: %d hits, %v; the job sits quarantined", len(hits), err)
	}
	if _, err := cl2.ClaimAt(ctx, key, nil, hintOf(hits[0])); err != nil {
		t.Fatalf("second claim: %v", err)
	}
}

// TestLapsedTempFreesJob: a client served the only job is granted a
// temporary claim by its nearest node and then never confirms nor
// releases it (it crashed). Once the temporary claim lapses the job is
// served again, not after the quarantine.
func TestLapsedTempFreesJob(t *testing.T) {
	ctx := context.Background()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 6, Seed: 62,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.TClaim = 200 * time.Millisecond }})
	net, clock := f.Net, f.Clock
	cn := &claimNet{net: net, clock: clock}
	key := testnet.SubmitJobs(t, f.Project, 1, testnet.Jobs{Args: func(int) []string { return []string{"1"} }})[0]
	net.FlushAll(ctx)

	crashed, _ := cn.client(t, "crashed")
	if hits, err := crashed.Index().Find(ctx, "lhc", 1); err != nil || len(hits) != 1 {
		t.Fatalf("first client's query: %d hits, %v", len(hits), err)
	}
	var resp wire.ClaimResponse
	nearest := net.TrueClosest(key, 1)[0]
	if err := crashed.Endpoint().Call(ctx, nearest, wire.ProtoClaim, &wire.ClaimRequest{Job: key}, wire.MaxReplyBytes+64, &resp); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second) // past T_claim on the nodes' clock
	second, cl := cn.client(t, "second")
	deadline := time.Now().Add(5 * time.Second)
	for {
		net.FlushAll(ctx)
		hits, err := second.Index().Find(ctx, "lhc", 1)
		if err == nil && len(hits) == 1 {
			if _, err := cl.ClaimAt(ctx, key, nil, hintOf(hits[0])); err != nil {
				t.Fatalf("second claim: %v", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the temporary claim lapsed, the job is not served: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hintOf is an index hit's replica set.
func hintOf(h wire.IndexHit) []peer.ID {
	out := make([]peer.ID, len(h.Replicas))
	for i, r := range h.Replicas {
		out[i] = peer.ID(r)
	}
	return out
}
