package dht_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet"
)

// TestTablePositionsFollowTheTable: the cached snapshot of the routing
// table lists exactly its peers, each at keyspace.PeerPos, after a peer
// is added and after it is swept out again; between changes it is the
// same snapshot (not listed and hashed again).
func TestTablePositionsFollowTheTable(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 6, Seed: 14})
	d := net.Node(0).DHT()
	check := func(when string) []dht.PeerAt {
		t.Helper()
		got := d.TablePositions()
		ids := make([]peer.ID, len(got))
		for i, q := range got {
			ids[i] = q.ID
			if q.Pos != keyspace.PeerPos([]byte(q.ID)) {
				t.Fatalf("%s: %s at a wrong position", when, q.ID)
			}
		}
		want := d.RoutingTablePeers()
		slices.Sort(ids)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Fatalf("%s: snapshot %v, table %v", when, ids, want)
		}
		return got
	}
	first := check("at start")
	if again := d.TablePositions(); &again[0] != &first[0] {
		t.Fatal("the snapshot was rebuilt with the table unchanged")
	}
	stranger := peer.ID("not a node of this overlay")
	if ok, _ := d.AddToRoutingTable(stranger); !ok {
		t.Fatal("could not put the stranger in the routing table")
	}
	if got := check("after an add"); len(got) != len(first)+1 {
		t.Fatalf("after an add: %d peers, want %d", len(got), len(first)+1)
	}
	d.SweepRoutingTable()
	check("after the sweep")
}

// TestNearestLocalMatchesSortingTheTable: NearestLocal's one-pass
// selection from the snapshot returns what sorting every routing-table
// peer and this node by distance returns, for random positions and every
// n from 0 past the table's size, before and after the table changes.
func TestNearestLocalMatchesSortingTheTable(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 12, Seed: 15})
	d := net.Node(0).DHT()
	rng := rand.New(rand.NewPCG(15, 1))
	check := func(when string) {
		t.Helper()
		all := append(d.RoutingTablePeers(), net.Node(0).ID())
		for range 200 {
			var pos keyspace.Pos
			for i := range pos {
				pos[i] = byte(rng.UintN(256))
			}
			want := slices.Clone(all)
			dht.SortPeers(pos, want)
			for n := range len(all) + 2 {
				got := d.NearestLocal(pos, n)
				if w := want[:min(n, len(want))]; !slices.Equal(got, w) {
					t.Fatalf("%s: NearestLocal(%x, %d) = %v, sorting gives %v", when, pos[:4], n, got, w)
				}
			}
		}
	}
	check("at start")
	if ok, _ := d.AddToRoutingTable(peer.ID("a stranger")); !ok {
		t.Fatal("could not put the stranger in the routing table")
	}
	check("after an add")
}
