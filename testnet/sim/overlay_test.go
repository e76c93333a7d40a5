package sim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
)

func randPos(rng *rand.Rand) keyspace.Pos {
	var p keyspace.Pos
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// TestRingClosest checks the ring's closest nodes against brute force,
// with uniform positions and with crowds sharing long prefixes.
func TestRingClosest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 60 {
		var r ring
		var all []keyspace.Pos
		n := 1 + rng.IntN(300)
		crowd := randPos(rng)
		for i := range n {
			p := randPos(rng)
			if trial%3 == 0 && i%2 == 0 {
				p = keyspace.NewRegion(crowd, 8+rng.IntN(20)).RandomPoint(rng)
			}
			all = append(all, p)
			r.insert(p, int32(i))
		}
		for range 50 {
			tgt := randPos(rng)
			if rng.IntN(2) == 0 {
				tgt = keyspace.NewRegion(crowd, rng.IntN(30)).RandomPoint(rng)
			}
			k := 1 + rng.IntN(25)
			got := r.closest(tgt, k, nil)
			var want []int32
			for _, i := range keyspace.ClosestIndices(tgt, all, k) {
				want = append(want, int32(i))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d: closest %d = %v, want %v", trial, k, got, want)
			}
			if slow := r.closestSlow(tgt, k, nil); !slices.Equal(slow, want) {
				t.Fatalf("trial %d: closestSlow %d = %v, want %v", trial, k, slow, want)
			}
		}
	}
}
