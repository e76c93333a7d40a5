package dht_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet"
)

// TestLookupPurpose: OnLookup hears each network lookup with its FIND_NODE
// count and the purpose its caller gave, each near question as one
// request, "other" when no purpose was given, and nothing for a lookup
// the cache answered.
func TestLookupPurpose(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int64{}
	onLookup := func(purpose string, rpcs int64) {
		mu.Lock()
		got[purpose] += rpcs
		mu.Unlock()
	}
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 8, Seed: 17, DHT: dht.Config{OnLookup: onLookup}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := net.Node(0).DHT()
	before := d.Stats().RPCs
	if _, err := d.ClosestPeers(dht.WithPurpose(ctx, dht.PurposeClaim), []byte("k1")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ClosestPeers(dht.WithPurpose(ctx, dht.PurposeClaim), []byte("k1")); err != nil { // cached
		t.Fatal(err)
	}
	if _, err := d.ClosestPeers(dht.DefaultPurpose(dht.WithPurpose(ctx, dht.PurposeSubmit), dht.PurposeHarvest), []byte("k2")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Near(ctx, net.Node(1).ID(), keyspace.KeyPos([]byte("k3")), 3); err != nil {
		t.Fatal(err)
	}
	sent := d.Stats().RPCs - before
	mu.Lock()
	defer mu.Unlock()
	if got[dht.PurposeClaim] == 0 || got[dht.PurposeSubmit] == 0 || got[dht.PurposeClaim]+got[dht.PurposeSubmit] != sent {
		t.Errorf("lookups by purpose %v, want claim and submit summing to the %d FIND_NODE sent", got, sent)
	}
	if got[dht.PurposeOther] != 1 || got[dht.PurposeHarvest] != 0 {
		t.Errorf("lookups by purpose %v, want the near question as other 1 and no harvest", got)
	}
}

// TestNearVia: NearVia asks the nearest of via that is not marked dead and
// answers; a killed peer costs a failed request and the next is asked; the
// answer leaves out the peers this party marked dead; with no peer able to
// answer it fails.
func TestNearVia(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 8, Seed: 19})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := []byte("near-via")
	via := net.TrueClosest(key, 5)
	var asker *dht.DHT
	for _, nd := range net.Live() {
		if !slices.Contains(via, nd.ID()) {
			asker = nd.DHT()
		}
	}
	via4 := via[:4]
	got, err := asker.NearVia(ctx, key, via4, 5)
	if err != nil || len(got) != 5 || !slices.Equal(got, via) {
		t.Fatalf("NearVia: %v %v, want the true closest %v", got, err, via)
	}
	if err := net.Kill(net.Index(via4[0])); err != nil {
		t.Fatal(err)
	}
	asker.MarkDead(via4[1])
	got, err = asker.NearVia(ctx, key, via4, 5)
	if err != nil || slices.Contains(got, via4[1]) || len(got) == 0 {
		t.Fatalf("NearVia past a killed peer: %v %v, want an answer without the peer marked dead", got, err)
	}
	if _, err := asker.NearVia(ctx, key, via4[:2], 5); err == nil {
		t.Fatal("NearVia over a killed and a dead-marked peer answered")
	}
}
