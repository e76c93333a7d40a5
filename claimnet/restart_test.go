package claimnet_test

import (
	"context"
	"testing"

	"github.com/up-pool/up/claim"
)

// TestCanJudge: a node judges which nodes are a job's closest once its
// table knows r nodes, or once it has been up the warm-up (a small
// network); not while its table is still filling after a restart.
func TestCanJudge(t *testing.T) {
	for _, c := range []struct {
		known, r   int
		up, warmup int64
		want       bool
	}{
		{0, 5, 0, 60000, false},     // just restarted, table empty
		{4, 5, 59999, 60000, false}, // still filling
		{5, 5, 0, 60000, true},      // knows r nodes
		{200, 5, 10, 60000, true},   // a big network
		{2, 5, 60000, 60000, true},  // a 3-node network, warmed up
	} {
		if got := claim.CanJudge(c.known, c.r, c.up, c.warmup); got != c.want {
			t.Errorf("CanJudge(%d, %d, %d, %d) = %v, want %v", c.known, c.r, c.up, c.warmup, got, c.want)
		}
	}
}

// TestRestartedNodeDoesNotRefuse: a holder of the job whose routing table
// is empty (restarted a moment ago) does not refuse the confirm of a
// claim the other holders grant: the claim is won, and no node counts a
// refused confirm.
func TestRestartedNodeDoesNotRefuse(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 61)
	key := cn.keys[0]
	holders := cn.net.Holders(key)
	if len(holders) < 2 {
		t.Fatalf("job held by %d nodes", len(holders))
	}
	fresh := cn.net.Node(holders[0])
	rt := fresh.DHT().Kad().RoutingTable()
	for _, p := range rt.ListPeers() {
		rt.RemovePeer(p)
	}
	// A peer may be added back at once (a connection in flight); what
	// matters is that the node knows fewer than r, as after a restart.
	if n := fresh.DHT().RoutingTableSize(); n >= fresh.DHT().Replication() {
		t.Fatalf("routing table of %d after emptying it", n)
	}
	_, cl := cn.client(t, "w")
	if _, err := cl.Claim(context.Background(), key); err != nil {
		t.Fatalf("claim with a freshly restarted holder: %v", err)
	}
	for _, nd := range cn.net.Live() {
		if c := nd.Claims().Counts(); c.Refused != 0 {
			t.Errorf("node %s refused %d confirms", nd.Name(), c.Refused)
		}
	}
}
