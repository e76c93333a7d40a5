package dht_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet"
)

// TestWalk: a client whose routing table holds part of a 64-node overlay
// walks to random positions by near questions and finds their true nearest
// nodes in a few questions each, with no kad-dht lookup.
func TestWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("64 nodes")
	}
	const nodes = 64
	net := testnet.StartNetwork(t, testnet.Options{Nodes: nodes, Seed: 23})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := net.NewAgent(ctx, certs.RoleClient, "walker")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	d := a.DHT()
	var all []peer.ID
	for _, nd := range net.Live() {
		all = append(all, nd.ID())
	}
	rng := rand.New(rand.NewPCG(23, 24))
	const walks = 50
	lookups := d.Stats()
	for i := range walks {
		pos := keyspace.NewRegion(keyspace.Pos{}, 0).RandomPoint(rng)
		got, err := d.Walk(ctx, pos, 5)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(all)
		dhtSort(pos, want)
		if !slices.Equal(got, want[:5]) {
			t.Fatalf("walk %d: %v, want %v", i, got, want[:5])
		}
	}
	ws := d.WalkStats()
	t.Logf("%d walks, %d near questions; routing table %d of %d", ws.Walks, ws.RPCs, d.RoutingTableSize(), nodes)
	if ws.Walks != walks || ws.RPCs < walks || ws.RPCs > 4*walks {
		t.Fatalf("walk stats %+v: want %d walks of 1..4 questions", ws, walks)
	}
	if after := d.Stats(); after != lookups {
		t.Fatalf("walks made kad-dht lookups: %+v then %+v", lookups, after)
	}
	if _, err := d.Walk(ctx, keyspace.Pos{}, 0); err == nil {
		t.Fatal("walk for 0 nodes accepted")
	}
}

func dhtSort(pos keyspace.Pos, ps []peer.ID) {
	slices.SortFunc(ps, func(x, y peer.ID) int {
		return keyspace.Compare(keyspace.Distance(keyspace.PeerPos([]byte(x)), pos), keyspace.Distance(keyspace.PeerPos([]byte(y)), pos))
	})
}
