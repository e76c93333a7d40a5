package pool_test

import (
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
)

// TestCountsKeepsUp: the closest-jobs count Counts keeps as jobs come and
// go equals a count of every held job from scratch (SelfNearestFunc) on
// every node: after the first submission, after more jobs came, after
// some were dropped, and after a routing table changed (a peer added,
// then removed).
func TestCountsKeepsUp(t *testing.T) {
	pn := startPoolNet(t, 8, 40, 91)
	check := func(when string) {
		t.Helper()
		total := 0
		for _, nd := range pn.net.Live() {
			nearest := nd.DHT().SelfNearestFunc()
			want := 0
			keys := nd.Pool().Keys()
			for _, k := range keys {
				if nearest(keyPosOf(k)) {
					want++
				}
			}
			held, closest := nd.Pool().Counts()
			if held != len(keys) || closest != want {
				t.Fatalf("%s: node %s counts %d held, %d closest; from scratch %d, %d", when, nd.ID(), held, closest, len(keys), want)
			}
			total += closest
		}
		if total == 0 {
			t.Fatalf("%s: no node is the closest to any job", when)
		}
	}
	check("after the first jobs")
	pn.keys = append(pn.keys, submit(t, pn.proj, 30)...)
	check("after more jobs")
	for i, k := range pn.keys[:20] {
		nd := pn.net.Node(pn.net.Holders(k)[i%2])
		if err := nd.Pool().Forget(k); err != nil {
			t.Fatal(err)
		}
	}
	check("after jobs were dropped")
	// A stranger next to node 0 (its position shares node 0's first 12
	// bits) and nearer than node 0 to one of node 0's closest jobs, so it
	// takes that job and about half the others. (Any stranger that near
	// takes a job whose first bit apart agrees with it: half of them; one
	// chosen blind took none of 7 with odds 1/128, and CI drew them.)
	d := pn.net.Node(0).DHT()
	self := d.Self()
	nearest := d.SelfNearestFunc()
	var mine keyspace.Pos
	found := false
	for _, k := range pn.net.Node(0).Pool().Keys() {
		if pos := keyPosOf(k); nearest(pos) {
			mine, found = pos, true
			break
		}
	}
	if !found {
		t.Fatal("node 0 is the closest to none of its jobs")
	}
	var stranger peer.ID
	for i := 0; stranger == ""; i++ {
		id := peer.ID(fmt.Sprintf("stranger %d", i))
		pos := keyspace.PeerPos([]byte(id))
		if keyspace.CommonPrefixLen(pos, self) >= 12 && keyspace.CloserTo(mine, pos, self) {
			stranger = id
		}
	}
	_, before := pn.net.Node(0).Pool().Counts()
	if ok, _ := d.AddToRoutingTable(stranger); !ok {
		t.Fatal("could not add the stranger")
	}
	check("after a peer was added")
	if _, after := pn.net.Node(0).Pool().Counts(); after >= before {
		t.Fatalf("the stranger next to node 0 took none of its %d closest jobs", before)
	}
	d.Kad().RoutingTable().RemovePeer(stranger)
	check("after it was removed")
}
