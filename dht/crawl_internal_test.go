package dht

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
)

// TestCrawlViewNearest: the sorted view's prefix search names the same
// nearest positions as a full scan, for views of 0 to 300 positions, some
// sharing long prefixes, and any n.
func TestCrawlViewNearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	whole := keyspace.NewRegion(keyspace.Pos{}, 0)
	for trial := range 300 {
		size := rng.IntN(300)
		v := &crawlView{}
		for range size {
			p := whole.RandomPoint(rng)
			if len(v.pos) > 0 && rng.IntN(4) == 0 {
				// A close neighbour of an earlier one.
				p = keyspace.NewRegion(v.pos[rng.IntN(len(v.pos))], 200+rng.IntN(50)).RandomPoint(rng)
			}
			v.pos = append(v.pos, p)
		}
		slices.SortFunc(v.pos, keyspace.Compare)
		v.pos = slices.Compact(v.pos)
		for range 20 {
			target := whole.RandomPoint(rng)
			if len(v.pos) > 0 && rng.IntN(3) == 0 {
				target = keyspace.NewRegion(v.pos[rng.IntN(len(v.pos))], rng.IntN(256)).RandomPoint(rng)
			}
			n := 1 + rng.IntN(25)
			got := v.nearest(target, n)
			want := keyspace.ClosestIndices(target, v.pos, n)
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d: %d positions, n %d: nearest %v, full scan %v", trial, len(v.pos), n, got, want)
			}
		}
	}
}
