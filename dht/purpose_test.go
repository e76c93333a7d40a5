package dht_test

import (
	"context"
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
