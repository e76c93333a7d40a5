package pool_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// shortOfClosest counts the jobs of the project's list that some node of
// their r closest live nodes does not hold.
func (pn *poolNet) shortOfClosest() int {
	short := 0
	for _, k := range pn.keys {
		holders := pn.net.Holders(k)
		for _, p := range pn.net.TrueClosest(k, 5) {
			if !slices.Contains(holders, pn.net.Index(p)) {
				short++
				break
			}
		}
	}
	return short
}

// TestRepairOnDeparture: kill 3 of 16 nodes; once the others' routing
// tables dropped them, one RepairNow on each live node puts every job
// back on its r closest live nodes, with no republish round. Before it
// some jobs are short of their r closest (the negative control), and a
// second RepairNow has nothing left to do.
func TestRepairOnDeparture(t *testing.T) {
	pn := startPoolNet(t, 16, 300, 25)
	killed := rand.New(rand.NewPCG(25, 25)).Perm(16)[:3]
	var gone []peer.ID
	for _, i := range killed {
		gone = append(gone, pn.net.Node(i).ID())
	}
	// Each live node hears of the departures of the killed nodes it is
	// connected to (their last connections close).
	want := map[peer.ID]int{}
	for _, nd := range pn.net.Live() {
		for _, g := range gone {
			if nd.DHT().Endpoint().Raw().Network().Connectedness(g) == network.Connected {
				want[nd.ID()]++
			}
		}
	}
	for _, i := range killed {
		if err := pn.net.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for !heardOf(pn, want) {
		if time.Now().After(deadline) {
			t.Fatal("live nodes have not heard of the departures after 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	short := pn.shortOfClosest()
	if short == 0 {
		t.Fatal("no job lost a replica among its r closest: the seed kills nothing that matters")
	}
	// A node that had not heard of a departure may pick the departed
	// node as a target: the failed sync marks it dead, which is a
	// departure heard of, repaired by the next pass (the repair loop's
	// next burst).
	jobs, rpcs, passes := 0, 0, 0
	for {
		passes++
		if passes > 4 {
			t.Fatal("repair still busy after 4 passes")
		}
		sent, failed := 0, 0
		for _, nd := range pn.net.Live() {
			st := nd.Pool().RepairNow(context.Background())
			sent, failed, rpcs = sent+st.Jobs, failed+st.Failed, rpcs+st.RPCs
		}
		jobs += sent
		if sent == 0 && failed == 0 {
			break
		}
	}
	t.Logf("killed %v: %d jobs short of their r closest; repair sent %d job states in %d RPCs, %d passes", killed, short, jobs, rpcs, passes)
	// Each short job needs one state per killed node among its r
	// closest: at most len(killed). More is the same repair sent twice.
	if jobs < short || jobs > len(killed)*short {
		t.Fatalf("repair sent %d job states for %d short jobs (want %d..%d)", jobs, short, short, len(killed)*short)
	}
	pn.checkPlacement(t, false)
}

// heardOf reports whether every live node's pool recorded at least the
// departures want names for it.
func heardOf(pn *poolNet, want map[peer.ID]int) bool {
	for _, nd := range pn.net.Live() {
		if nd.Pool().RepairTotals().Departed < want[nd.ID()] {
			return false
		}
	}
	return true
}

// TestRepairIgnoresClosedConnection: a node whose connections were
// closed but which still answers (a connection manager's trim, or a peer
// feigning departure) is probed and repaired around by nobody. Control
// (by hand): without the probe, node003 alone sent 223 jobs' states on.
func TestRepairIgnoresClosedConnection(t *testing.T) {
	pn := startPoolNet(t, 16, 300, 26)
	a := pn.net.Node(3)
	want := map[peer.ID]int{}
	for _, nd := range pn.net.Live() {
		if nd != a && nd.DHT().Endpoint().Raw().Network().Connectedness(a.ID()) == network.Connected {
			want[nd.ID()] = 1
		}
	}
	for _, nd := range pn.net.Live() {
		if nd != a {
			_ = nd.DHT().Endpoint().Raw().Network().ClosePeer(a.ID())
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for !heardOf(pn, want) {
		if time.Now().After(deadline) {
			t.Fatal("live nodes have not heard of the closed connections after 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, nd := range pn.net.Live() {
		if st := nd.Pool().RepairNow(context.Background()); st.Jobs != 0 {
			t.Fatalf("%s repaired %d jobs around node 3, which still answers", nd.Name(), st.Jobs)
		}
	}
}
