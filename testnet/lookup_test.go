package testnet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/up-pool/up/testnet"
)

// TestClosestLookupAccuracy: 32 nodes, 200 random keys, closest-5 from
// every node against the truth computed from all positions; the cached
// second lookup costs no RPC.
func TestClosestLookupAccuracy(t *testing.T) {
	// A still clock: the 90 s cache must not lapse however slow the run.
	clock := testnet.NewClock(time.Now())
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 32, Seed: 7, Now: clock.Now})
	rng := rand.New(rand.NewPCG(7, 7))
	keys := make([][]byte, 200)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d-%d", i, rng.Uint64())
	}
	ctx := context.Background()
	total, exact := 0, 0
	for _, nd := range net.Live() {
		before := nd.DHT().Stats()
		for _, k := range keys {
			got, err := nd.DHT().ClosestPeers(ctx, k)
			if err != nil {
				t.Fatalf("%s lookup: %v", nd.Name(), err)
			}
			want := net.TrueClosest(k, 5)
			total++
			if equalIDs(got, want) {
				exact++
			}
		}
		// The first round really asked the network, once per key.
		if st := nd.DHT().Stats(); st.Network-before.Network != int64(len(keys)) || st.RPCs == before.RPCs {
			t.Fatalf("%s: first round made %d network lookups with %d RPCs, want %d lookups", nd.Name(),
				st.Network-before.Network, st.RPCs-before.RPCs, len(keys))
		}
	}
	ratio := float64(exact) / float64(total)
	t.Logf("exact closest-5 for %d of %d (node, key) pairs (%.2f%%)", exact, total, 100*ratio)
	if ratio < 0.99 {
		t.Fatalf("only %.2f%% of lookups exact, want >= 99%%", 100*ratio)
	}
	// Second round: all from the cache, no RPC.
	for _, nd := range net.Live() {
		before := nd.DHT().Stats()
		for _, k := range keys {
			if _, err := nd.DHT().ClosestPeers(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		after := nd.DHT().Stats()
		if after.RPCs != before.RPCs || after.Network != before.Network {
			t.Fatalf("%s: cached lookups sent %d RPCs in %d network lookups", nd.Name(),
				after.RPCs-before.RPCs, after.Network-before.Network)
		}
		if after.Cached-before.Cached != int64(len(keys)) {
			t.Fatalf("%s: %d cache hits, want %d", nd.Name(), after.Cached-before.Cached, len(keys))
		}
	}
}

func equalIDs[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
