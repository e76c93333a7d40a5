package dht_test

import (
	"math/rand/v2"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet"
)

// TestSelfNearestFunc: the precomputed test agrees with NearestLocal on
// random positions and on positions next to the node's own.
func TestSelfNearestFunc(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 12, Seed: 27})
	rng := rand.New(rand.NewPCG(27, 28))
	whole := keyspace.NewRegion(keyspace.Pos{}, 0)
	for _, nd := range net.Live() {
		d := nd.DHT()
		nearest := d.SelfNearestFunc()
		yes := 0
		for i := range 400 {
			pos := whole.RandomPoint(rng)
			if i%2 == 0 {
				pos = keyspace.NewRegion(d.Self(), rng.IntN(12)).RandomPoint(rng)
			}
			want := d.NearestLocal(pos, 1)[0] == nd.ID()
			if got := nearest(pos); got != want {
				t.Fatalf("%s at %s: SelfNearestFunc %v, NearestLocal says %v", nd.Name(), pos.Short(), got, want)
			}
			if want {
				yes++
			}
		}
		if yes == 0 {
			t.Fatalf("%s nearest to none of 400 positions, 200 of them near its own", nd.Name())
		}
	}
}
