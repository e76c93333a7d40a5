package dht_test

import (
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
