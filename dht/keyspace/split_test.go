package keyspace

import (
	"math/rand/v2"
	"testing"
)

// heavyItems draws m item positions around x: mostly sharing a long prefix
// with x (as the items a node is closest to would), some far away.
func heavyItems(rng *rand.Rand, x Pos, m int) []Pos {
	base := rng.IntN(40)
	items := make([]Pos, m)
	for i := range items {
		if rng.IntN(5) == 0 {
			items[i] = nearPos(rng, x, rng.IntN(Bits+1))
		} else {
			items[i] = nearPos(rng, x, base+rng.IntN(12))
		}
	}
	return items
}

// TestMovedByMatchesBruteForce is the geometric property behind SplitPoint:
// for random x, items and d, every point y of FlipPrefix(x, d) is strictly
// closer than x to exactly MovedBy(x, d, items) items, which are those whose
// bit d differs from x's. It also pins down the claim that is only partly
// true: items with cpl == d always move, items with cpl > d never do, but
// items with cpl < d may.
func TestMovedByMatchesBruteForce(t *testing.T) {
	rng := newRNG(30)
	sawShallowMove := false
	for iter := 0; iter < 300; iter++ {
		x := randPos(rng)
		items := heavyItems(rng, x, 1+rng.IntN(40))
		d := rng.IntN(Bits)
		if iter%2 == 0 {
			d = CommonPrefixLen(x, items[rng.IntN(len(items))]) % Bits
		}
		r := FlipPrefix(x, d)
		moved := MovedBy(x, d, items)
		for k := 0; k < 8; k++ {
			y := r.RandomPoint(rng)
			if k == 0 {
				y = r.First()
			} else if k == 1 {
				y = r.Last()
			}
			count := 0
			for _, it := range items {
				closer := bigDist(it, y).Cmp(bigDist(it, x)) < 0
				if closer {
					count++
				}
				cpl := bruteCPL(it, x)
				switch {
				case cpl == d && !closer:
					t.Fatalf("item with cpl == d not closer to y")
				case cpl > d && closer:
					t.Fatalf("item with cpl > d closer to y")
				case cpl < d && closer:
					sawShallowMove = true
				}
				if closer != (bigBit(it, d) != bigBit(x, d)) {
					t.Fatalf("closer=%v but bit %d differs=%v", closer, d, bigBit(it, d) != bigBit(x, d))
				}
			}
			if count != moved {
				t.Fatalf("y=%v in %v is closer for %d items, MovedBy says %d", y, r, count, moved)
			}
		}
	}
	if !sawShallowMove {
		t.Fatal("never saw an item with cpl < d move; the generator is too narrow")
	}
}

// TestMovedByShallowExample is the counterexample to "only items sharing
// x's first d bits move": x = 0, item = 1100..., d = 1. The item differs from
// x at bit 0 (cpl 0) yet y = 01... is closer to it than x.
func TestMovedByShallowExample(t *testing.T) {
	x := Pos{}
	item := Pos{0xc0}
	y := FlipPrefix(x, 1).First() // 0100...
	if !CloserTo(item, y, x) {
		t.Fatal("y should be closer to the item than x")
	}
	if got := MovedBy(x, 1, []Pos{item}); got != 1 {
		t.Fatalf("MovedBy = %d, want 1", got)
	}
}

// bruteSplit scans every d with the brute-force move count.
func bruteSplit(x Pos, items []Pos) (int, int) {
	bestD, bestM, bestS := 0, 0, -1
	for d := 0; d < Bits; d++ {
		m := 0
		for _, it := range items {
			if bigBit(it, d) != bigBit(x, d) {
				m++
			}
		}
		s := 2*m - len(items)
		if s < 0 {
			s = -s
		}
		if bestS < 0 || s < bestS {
			bestD, bestM, bestS = d, m, s
		}
	}
	return bestD, bestM
}

func TestSplitPointBruteForce(t *testing.T) {
	rng := newRNG(31)
	for iter := 0; iter < 300; iter++ {
		x := randPos(rng)
		items := heavyItems(rng, x, 1+rng.IntN(50))
		d, moved, ok := SplitPoint(x, items)
		wd, wm := bruteSplit(x, items)
		if d != wd || moved != wm {
			t.Fatalf("SplitPoint = (%d,%d), want (%d,%d)", d, moved, wd, wm)
		}
		if moved != MovedBy(x, d, items) {
			t.Fatal("SplitPoint's count disagrees with MovedBy")
		}
		if ok != (moved > 0 && moved < len(items)) {
			t.Fatalf("ok = %v with moved %d of %d", ok, moved, len(items))
		}
		minCPL := Bits
		for _, it := range items {
			minCPL = min(minCPL, CommonPrefixLen(it, x))
		}
		if ok && d < minCPL {
			t.Fatalf("d = %d below the common prefix %d of all items", d, minCPL)
		}
	}
}

func TestSplitPointTable(t *testing.T) {
	x := Pos{}
	p := func(b ...byte) Pos { var q Pos; copy(q[:], b); return q }
	cases := []struct {
		name     string
		items    []Pos
		d, moved int
		ok       bool
	}{
		{"empty", nil, 0, 0, false},
		{"all equal x", []Pos{x, x, x}, 0, 0, false},
		{"single item", []Pos{p(0x10)}, 0, 0, false},
		// One item differing at bit 0: d = 0 takes it all, which is no split.
		{"single far item", []Pos{p(0x80)}, 0, 1, false},
		// Every item differs from x at bit 0, and nowhere else evenly.
		{"all moved", []Pos{p(0x80), p(0x80)}, 0, 2, false},
		// Top bit splits 2/2.
		{"even at bit 0", []Pos{p(0x80), p(0x90), p(0x01), p(0x02)}, 0, 2, true},
		// All share 0000; bit 4 splits 2/2, bit 5 would move all 4.
		{"even at bit 4", []Pos{p(0x0c), p(0x0d), p(0x04), p(0x06)}, 4, 2, true},
		// 3 items: bit 6 moves 1 (|2-3|=1), bit 7 moves 2 (|4-3|=1): tie -> 6.
		{"tie takes smaller d", []Pos{p(0x01), p(0x03), p(0x00, 0x01)}, 6, 1, true},
		// Items deep in the keyspace: bit 200 splits 2/2.
		{"deep bit", func() []Pos {
			a, b := x.FlipBit(200), x.FlipBit(200).FlipBit(201)
			return []Pos{a, b, x.FlipBit(250), x.FlipBit(255)}
		}(), 200, 2, true},
	}
	for _, c := range cases {
		d, moved, ok := SplitPoint(x, c.items)
		if d != c.d || moved != c.moved || ok != c.ok {
			t.Errorf("%s: SplitPoint = (%d,%d,%v), want (%d,%d,%v)", c.name, d, moved, ok, c.d, c.moved, c.ok)
		}
	}
}

func BenchmarkSplitPoint(b *testing.B) {
	rng := newRNG(32)
	x := randPos(rng)
	items := heavyItems(rng, x, 1000)
	for b.Loop() {
		SplitPoint(x, items)
	}
}
