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

// TestCrawl: a project's crawl finds every node of the overlay in a few
// near questions, and afterwards NearestKnown names each random key's true
// closest nodes with no RPC.
func TestCrawl(t *testing.T) {
	if testing.Short() {
		t.Skip("64 nodes")
	}
	const nodes = 64
	net := testnet.StartNetwork(t, testnet.Options{Nodes: nodes, Seed: 21})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := net.NewAgent(ctx, certs.RoleProject, "crawler")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	d := a.DHT()
	if !d.CrawledAt().IsZero() {
		t.Fatal("crawled before any crawl")
	}
	var all []peer.ID
	for _, nd := range net.Live() {
		all = append(all, nd.ID())
	}
	st, err := d.Crawl(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("crawl: %+v; routing table %d of %d nodes", st, d.RoutingTableSize(), nodes)
	if st.Nodes != nodes {
		t.Fatalf("crawl found %d nodes, want %d", st.Nodes, nodes)
	}
	if st.RPCs < 1 || st.RPCs > nodes/2 {
		t.Fatalf("crawl of %d nodes took %d near questions, want 1..%d", nodes, st.RPCs, nodes/2)
	}
	if d.CrawledAt().IsZero() {
		t.Fatal("no crawl time recorded")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	before := d.Stats()
	for i := range 200 {
		pos := keyspace.NewRegion(keyspace.Pos{}, 0).RandomPoint(rng)
		got := d.NearestKnown(pos, 5)
		want := slices.Clone(all)
		dhtSort(pos, want)
		if !slices.Equal(got, want[:5]) {
			t.Fatalf("key %d: NearestKnown %v, want %v", i, got, want[:5])
		}
	}
	if after := d.Stats(); after != before {
		t.Fatalf("NearestKnown made lookups: %+v then %+v", before, after)
	}
}
