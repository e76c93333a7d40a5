package indexclient

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
)

// TestCoverage: the sub-region coverage reports around a point holds no
// node missing from the answer it was computed from (the answerer's n
// nearest to the point), holds the point, and holds an answered node.
func TestCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	checked := 0
	for trial := range 300 {
		universe := make([]peer.ID, 5+rng.IntN(200))
		for i := range universe {
			universe[i] = peer.ID(fmt.Sprintf("peer-%d-%d", trial, i))
		}
		x := keyspace.NewRegion(keyspace.Pos{}, 0).RandomPoint(rng)
		sorted := slices.Clone(universe)
		dht.SortPeers(x, sorted)
		answer := sorted[:min(len(sorted), nearLimit)]
		sub, ok := coverage(x, answer, nearLimit)
		if len(answer) < nearLimit {
			if !ok || sub.Bits != 0 {
				t.Fatalf("trial %d: short answer covers %v (%v), want the whole keyspace", trial, sub, ok)
			}
			continue
		}
		if !ok {
			continue
		}
		if !sub.Contains(x) {
			t.Fatalf("trial %d: %v does not hold its point", trial, sub)
		}
		holds := false
		for _, p := range universe {
			in := sub.Contains(keyspace.PeerPos([]byte(p)))
			if in && !slices.Contains(answer, p) {
				t.Fatalf("trial %d: %v holds %s, missing from the answer", trial, sub, p)
			}
			holds = holds || in
		}
		if !holds {
			t.Fatalf("trial %d: %v holds no node", trial, sub)
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d of 300 full answers gave a sub-region", checked)
	}
	if _, ok := coverage(keyspace.Pos{}, nil, nearLimit); ok {
		t.Fatal("an empty answer covers something")
	}
}

// TestCrowdedView: a view is crowded only when every known peer lies in
// the region; closestTo skips dead peers.
func TestCrowdedView(t *testing.T) {
	var ids []peer.ID
	for i := range 64 {
		ids = append(ids, peer.ID(fmt.Sprintf("node-%d", i)))
	}
	first := keyspace.PeerPos([]byte(ids[0]))
	region := keyspace.NewRegion(first, 1)
	var inside, outside []peer.ID
	for _, p := range ids {
		if region.Contains(keyspace.PeerPos([]byte(p))) {
			inside = append(inside, p)
		} else {
			outside = append(outside, p)
		}
	}
	if len(outside) == 0 || !allInside(region, inside) || allInside(region, append(slices.Clone(inside), outside[0])) {
		t.Fatalf("allInside wrong: %d inside, %d outside", len(inside), len(outside))
	}
	x := keyspace.PeerPos([]byte(inside[3]))
	sorted := slices.Clone(ids)
	dht.SortPeers(x, sorted)
	none := func(peer.ID) bool { return false }
	if got := closestTo(x, ids, none); got != sorted[0] {
		t.Fatalf("closest %s, want %s", got, sorted[0])
	}
	deadFirst := func(p peer.ID) bool { return p == sorted[0] }
	if got := closestTo(x, ids, deadFirst); got != sorted[1] {
		t.Fatalf("closest live %s, want %s", got, sorted[1])
	}
}
