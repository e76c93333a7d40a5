package loadbalance

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
)

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x10adba1a)) }

func randPos(rng *rand.Rand) keyspace.Pos { return keyspace.Region{}.RandomPoint(rng) }

// nearPos returns a random position sharing exactly cpl leading bits with x
// (all 256 if cpl == 256).
func nearPos(rng *rand.Rand, x keyspace.Pos, cpl int) keyspace.Pos {
	if cpl >= keyspace.Bits {
		return x
	}
	return keyspace.FlipPrefix(x, cpl).RandomPoint(rng)
}

// bruteMoved is the weight a newcomer in FlipPrefix(heavy, d) takes, by the
// MovedBy rule: the usable items whose bit d differs from heavy's.
func bruteMoved(heavy keyspace.Pos, d int, items []Item) (moved, total float64) {
	for _, it := range items {
		if !(it.Weight > 0) || math.IsInf(it.Weight, 1) {
			continue
		}
		total += it.Weight
		if it.Pos.Bit(d) != heavy.Bit(d) {
			moved += it.Weight
		}
	}
	return moved, total
}

// closerIdx is Moves done independently: items whose XOR distance to y is
// below their distance to heavy.
func closerIdx(heavy, y keyspace.Pos, items []Item) []int {
	var idx []int
	for i, it := range items {
		if keyspace.Compare(keyspace.Distance(it.Pos, y), keyspace.Distance(it.Pos, heavy)) < 0 {
			idx = append(idx, i)
		}
	}
	return idx
}

func weightOf(items []Item, idx []int) float64 {
	w := 0.0
	for _, i := range idx {
		if usable(items[i].Weight) {
			w += items[i].Weight
		}
	}
	return w
}

// randomItems draws a heavy node's items: index entries (weight 1) and jobs
// (weight 3) sharing random prefixes with heavy, some clustered, some
// uniform, and now and then a weight Split must ignore.
func randomItems(rng *rand.Rand, heavy keyspace.Pos, n int) []Item {
	base := rng.IntN(30)
	cluster := nearPos(rng, heavy, rng.IntN(20))
	items := make([]Item, n)
	for i := range items {
		var p keyspace.Pos
		switch rng.IntN(4) {
		case 0:
			p = randPos(rng)
		case 1:
			p = keyspace.NewRegion(cluster, 16).RandomPoint(rng)
		default:
			p = nearPos(rng, heavy, base+rng.IntN(12))
		}
		w := 1.0
		switch rng.IntN(20) {
		case 0, 1, 2, 3:
			w = 3
		case 4:
			w = 0.25 + rng.Float64()
		case 5:
			w = []float64{0, -1, math.NaN(), math.Inf(1)}[rng.IntN(4)]
		}
		items[i] = Item{Pos: p, Weight: w}
	}
	return items
}

// TestSplitMatchesBruteForce: Split's (and SplitFrom's) moved is the
// brute-force weight of its d; no allowed d is strictly more balanced (for
// Split) or the chosen d is the first allowed one within the slack of the
// best (SplitFrom; ties and near-ties go to the smaller d); and a newcomer
// anywhere in the target region takes exactly that weight.
func TestSplitMatchesBruteForce(t *testing.T) {
	rng := newRNG(1)
	for iter := 0; iter < 400; iter++ {
		heavy := randPos(rng)
		items := randomItems(rng, heavy, 1+rng.IntN(300))
		minD, slack := 0, 0.0
		target, d, moved, total, ok := Split(heavy, items)
		if iter%2 == 1 {
			minD = []int{0, rng.IntN(40), rng.IntN(257), 256}[rng.IntN(4)]
			slack = []float64{0, 0.05, 0.1, 0.3, -1}[rng.IntN(5)]
			target, d, moved, total, ok = SplitFrom(heavy, items, minD, slack)
		}
		if target != keyspace.FlipPrefix(heavy, d) || d < min(minD, 255) {
			t.Fatalf("iter %d: target %v, d %d (minD %d)", iter, target, d, minD)
		}
		bm, bt := bruteMoved(heavy, d, items)
		tol := 1e-9 * bt
		if bt != total && math.Abs(bt-total) > tol {
			t.Fatalf("iter %d: total %v, brute force %v", iter, total, bt)
		}
		if minD == 256 || total == 0 {
			if ok || moved != 0 {
				t.Fatalf("iter %d: minD %d total %v: moved %v ok %v", iter, minD, total, moved, ok)
			}
			continue
		}
		if math.Abs(bm-moved) > tol {
			t.Fatalf("iter %d: moved %v, brute force %v", iter, moved, bm)
		}
		best, anyOK := math.Inf(1), false
		scores := make([]float64, keyspace.Bits)
		for e := minD; e < keyspace.Bits; e++ {
			m, _ := bruteMoved(heavy, e, items)
			scores[e] = math.Abs(2*m - total)
			best = min(best, scores[e])
			anyOK = anyOK || (m > tol && m < total-tol)
		}
		// Split treats scores within 1e-9·total of the best as ties; eps
		// covers rounding differences between its sums and these.
		limit, eps := best+max(slack, 1e-9)*total, 1e-11*total
		if scores[d] > limit+eps {
			t.Fatalf("iter %d: d=%d scores %v, best %v, slack %v: not within", iter, d, scores[d], best, slack)
		}
		for e := minD; e < d; e++ {
			if scores[e] <= limit-eps {
				t.Fatalf("iter %d: smaller d=%d (score %v) within limit %v not taken (chose %d)", iter, e, scores[e], limit, d)
			}
		}
		if ok != anyOK {
			t.Fatalf("iter %d: ok = %v, but some bit splits = %v", iter, ok, anyOK)
		}
		for k := 0; k < 4; k++ {
			y := target.RandomPoint(rng)
			switch k {
			case 0:
				y = target.First()
			case 1:
				y = target.Last()
			}
			idx := Moves(heavy, y, items)
			if w := weightOf(items, idx); math.Abs(w-moved) > tol {
				t.Fatalf("iter %d: newcomer %v takes weight %v, Split said %v", iter, y.Short(), w, moved)
			}
			want := closerIdx(heavy, y, items)
			if len(idx) != len(want) {
				t.Fatalf("iter %d: Moves gives %d items, distance comparison %d", iter, len(idx), len(want))
			}
			for i := range idx {
				if idx[i] != want[i] {
					t.Fatalf("iter %d: Moves[%d] = %d, want %d", iter, i, idx[i], want[i])
				}
			}
		}
	}
}

func TestSplitNothingToSplit(t *testing.T) {
	rng := newRNG(2)
	heavy := randPos(rng)
	other := randPos(rng)
	for _, tc := range []struct {
		name  string
		items []Item
		total float64
	}{
		{"nil", nil, 0},
		{"one item", []Item{{other, 3}}, 3},
		{"items at heavy", []Item{{heavy, 1}, {heavy, 3}}, 4},
		{"same position", []Item{{other, 1}, {other, 1}, {other, 3}}, 5},
		{"no usable weight", []Item{{other, 0}, {heavy, -1}, {randPos(rng), math.NaN()}}, 0},
	} {
		target, d, moved, total, ok := Split(heavy, tc.items)
		if ok || total != tc.total || (moved != 0 && moved != total) {
			t.Errorf("%s: Split = d %d moved %v total %v ok %v; want ok false, total %v", tc.name, d, moved, total, ok, tc.total)
		}
		if target != keyspace.FlipPrefix(heavy, d) {
			t.Errorf("%s: target %v is not FlipPrefix(heavy, %d)", tc.name, target, d)
		}
	}
	// A newcomer at heavy's own position is closer to nothing.
	items := []Item{{heavy, 1}, {other, 1}, {randPos(rng), 3}}
	if idx := Moves(heavy, heavy, items); idx != nil {
		t.Errorf("Moves(heavy, heavy) = %v, want nil", idx)
	}
	// Two distinct items can always be split one-one.
	a, b := randPos(rng), randPos(rng)
	if _, _, moved, total, ok := Split(heavy, []Item{{a, 1}, {b, 1}}); !ok || moved != 1 || total != 2 {
		t.Errorf("two items: moved %v total %v ok %v, want 1 of 2", moved, total, ok)
	}
}

// TestSplitClustered: index entries of one wildcard region share 16 bits
// with each other but only k < 16 with the heavy node holding them; every
// bit before 16 moves none or all, so Split must pick d >= 16 and halve
// them.
func TestSplitClustered(t *testing.T) {
	rng := newRNG(3)
	for iter := 0; iter < 40; iter++ {
		region := keyspace.NewRegion(randPos(rng), 16)
		k := rng.IntN(16)
		heavy := nearPos(rng, region.First(), k)
		if iter%5 == 0 { // heavy inside the region
			heavy = region.RandomPoint(rng)
		}
		n := 1000 + rng.IntN(4000)
		items := make([]Item, n)
		for i := range items {
			items[i] = Item{Pos: region.RandomPoint(rng), Weight: 1}
		}
		target, d, moved, total, ok := Split(heavy, items)
		if !ok || d < 16 {
			t.Fatalf("iter %d (k=%d): d = %d ok %v, want d >= 16", iter, k, d, ok)
		}
		if r := 2*moved/total - 1; math.Abs(r) > 0.2 {
			t.Fatalf("iter %d: moved %v of %v, not within 20%% of half", iter, moved, total)
		}
		if got := weightOf(items, Moves(heavy, target.RandomPoint(rng), items)); got != moved {
			t.Fatalf("iter %d: newcomer takes %v, Split said %v", iter, got, moved)
		}
	}
}

// TestSplitWeighted: jobs weigh WJob, so a split by weight differs from a
// split by count.
func TestSplitWeighted(t *testing.T) {
	rng := newRNG(4)
	heavy := randPos(rng)
	// 200 index entries differ from heavy at bit 50 only, 100 at bit 60
	// only, and 100 jobs at bit 41 only. By count bit 50 halves (200 of
	// 400); by weight (600 in all) bit 41 does (the jobs weigh 300).
	var idx, jobs []keyspace.Pos
	for i := range 300 {
		idx = append(idx, heavy.FlipBit(50+10*(i/200)))
	}
	for range 100 {
		jobs = append(jobs, heavy.FlipBit(41))
	}
	if _, d, _, _, _ := Split(heavy, Weighted(append(idx, jobs...), nil, Params{})); d != 50 {
		t.Fatalf("unweighted split at %d, want 50", d)
	}
	items := Weighted(idx, jobs, Params{})
	if len(items) != 400 || items[0].Weight != 1 || items[399].Weight != 3 {
		t.Fatalf("Weighted gave %d items, weights %v/%v", len(items), items[0].Weight, items[399].Weight)
	}
	_, d, moved, total, ok := Split(heavy, items)
	if !ok || total != 600 || moved != 300 || d != 41 {
		t.Fatalf("Split = d %d moved %v total %v ok %v; want d 41, 300 of 600", d, moved, total, ok)
	}
}

func TestMinSplitBit(t *testing.T) {
	rng := newRNG(6)
	heavy := randPos(rng)
	for _, tc := range []struct {
		name   string
		others []keyspace.Pos
		want   int
	}{
		{"none", nil, 0},
		{"only heavy itself", []keyspace.Pos{heavy}, 0},
		{"one at cpl 5", []keyspace.Pos{nearPos(rng, heavy, 5)}, 6},
		{"nearest wins", []keyspace.Pos{nearPos(rng, heavy, 5), heavy, nearPos(rng, heavy, 17), nearPos(rng, heavy, 0)}, 18},
		{"last bit", []keyspace.Pos{heavy.FlipBit(255)}, 256},
	} {
		if got := MinSplitBit(heavy, tc.others); got != tc.want {
			t.Errorf("%s: MinSplitBit = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSplitFromTakesOnlyFromHeavy: in networks of nodes, some close
// together, with items held by their closest node, a newcomer landing in
// SplitFrom's target beyond the heavy node's nearest neighbour becomes the
// closest node for exactly moved weight, all of it the heavy node's. Split
// alone (no minD) does take other nodes' items now and then.
func TestSplitFromTakesOnlyFromHeavy(t *testing.T) {
	rng := newRNG(7)
	splits, guardedSteals, plainSteals := 0, 0, 0
	for net := 0; net < 30; net++ {
		nodes := make([]keyspace.Pos, 48)
		for i := range nodes {
			nodes[i] = randPos(rng)
			if i > 0 && rng.IntN(2) == 0 {
				nodes[i] = nearPos(rng, nodes[rng.IntN(i)], 10+rng.IntN(30))
			}
		}
		region := keyspace.NewRegion(nearPos(rng, nodes[0], rng.IntN(12)), 16)
		items := make([]Item, 3000)
		owner := make([]int, len(items))
		for i := range items {
			p := randPos(rng)
			if i%2 == 0 {
				p = region.RandomPoint(rng)
			}
			items[i] = Item{Pos: p, Weight: float64(1 + 2*(i%3/2))}
			owner[i] = keyspace.Closest(p, nodes)
		}
		for h := range nodes {
			var held []Item
			for i := range items {
				if owner[i] == h {
					held = append(held, items[i])
				}
			}
			for _, guarded := range []bool{true, false} {
				minD, slack := 0, 0.0
				if guarded {
					minD, slack = MinSplitBit(nodes[h], nodes), []float64{0, 0.1}[rng.IntN(2)]
				}
				target, _, moved, _, ok := SplitFrom(nodes[h], held, minD, slack)
				if !ok {
					continue
				}
				y := target.RandomPoint(rng)
				taken, stolen := 0.0, 0
				for i, it := range items {
					if keyspace.CloserTo(it.Pos, y, nodes[owner[i]]) {
						taken += it.Weight
						if owner[i] != h {
							stolen++
						}
					}
				}
				if !guarded {
					if stolen > 0 {
						plainSteals++
					}
					continue
				}
				splits++
				if stolen > 0 || taken != moved {
					guardedSteals++
					t.Errorf("net %d heavy %d: newcomer took %v (Split said %v), %d items from other nodes", net, h, taken, moved, stolen)
				}
			}
		}
	}
	t.Logf("%d guarded splits, %d stole; unguarded Split stole in %d cases", splits, guardedSteals, plainSteals)
	if splits < 100 || plainSteals == 0 {
		t.Fatalf("test too weak: %d guarded splits, %d unguarded steals", splits, plainSteals)
	}
}

func BenchmarkSplit100k(b *testing.B) {
	rng := newRNG(5)
	heavy := randPos(rng)
	items := randomItems(rng, heavy, 100_000)
	b.ResetTimer()
	for b.Loop() {
		if _, _, _, _, ok := Split(heavy, items); !ok {
			b.Fatal("nothing to split")
		}
	}
}
