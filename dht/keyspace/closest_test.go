package keyspace

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// bruteOrder returns all indices of ps stably sorted by big.Int distance.
func bruteOrder(target Pos, ps []Pos) []int {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return bigDist(target, ps[idx[a]]).Cmp(bigDist(target, ps[idx[b]])) < 0
	})
	return idx
}

// randSet draws m positions near target (various prefix lengths), with some
// duplicates.
func randSet(rng *rand.Rand, target Pos, m int) []Pos {
	ps := make([]Pos, m)
	for i := range ps {
		switch {
		case i > 0 && rng.IntN(8) == 0:
			ps[i] = ps[rng.IntN(i)]
		case rng.IntN(2) == 0:
			ps[i] = nearPos(rng, target, rng.IntN(Bits+1))
		default:
			ps[i] = randPos(rng)
		}
	}
	return ps
}

func TestClosestIndicesBruteForce(t *testing.T) {
	rng := newRNG(20)
	for iter := 0; iter < 400; iter++ {
		target := randPos(rng)
		m := rng.IntN(70)
		ps := randSet(rng, target, m)
		orig := slices.Clone(ps)
		want := bruteOrder(target, ps)
		for _, n := range []int{-1, 0, 1, 2, 5, 16, 17, m / 2, m, m + 3} {
			got := ClosestIndices(target, ps, n)
			k := min(max(n, 0), m)
			if got == nil || !slices.Equal(got, want[:k]) {
				t.Fatalf("m=%d n=%d: ClosestIndices = %v, want %v", m, n, got, want[:k])
			}
		}
		if !slices.Equal(ps, orig) {
			t.Fatal("ClosestIndices modified ps")
		}
		wantClosest := -1
		if m > 0 {
			wantClosest = want[0]
		}
		if got := Closest(target, ps); got != wantClosest {
			t.Fatalf("Closest = %d, want %d", got, wantClosest)
		}
		sorted := slices.Clone(ps)
		SortByDistance(target, sorted)
		for i, j := range want {
			if sorted[i] != ps[j] {
				t.Fatalf("SortByDistance[%d] = %v, want %v", i, sorted[i], ps[j])
			}
		}
	}
}

func TestClosestTable(t *testing.T) {
	var target Pos
	p := func(b0 byte) Pos { return Pos{b0} }
	ps := []Pos{p(0x80), p(0x01), p(0x40), p(0x01), p(0x03)}
	if got := Closest(target, ps); got != 1 {
		t.Errorf("Closest = %d, want 1 (first of the duplicates)", got)
	}
	if got := ClosestIndices(target, ps, 3); !slices.Equal(got, []int{1, 3, 4}) {
		t.Errorf("ClosestIndices = %v, want [1 3 4]", got)
	}
	if got := ClosestIndices(p(0xff), ps, 2); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("ClosestIndices(ff) = %v, want [0 2]", got)
	}
	if got := Closest(target, nil); got != -1 {
		t.Errorf("Closest(nil) = %d, want -1", got)
	}
	if got := ClosestIndices(target, nil, 3); got == nil || len(got) != 0 {
		t.Errorf("ClosestIndices(nil) = %#v, want empty", got)
	}
}

func BenchmarkClosestIndices(b *testing.B) {
	rng := newRNG(21)
	ps := make([]Pos, 1000)
	for i := range ps {
		ps[i] = randPos(rng)
	}
	target := randPos(rng)
	for b.Loop() {
		ClosestIndices(target, ps, 5)
	}
}

func BenchmarkClosestIndicesN50(b *testing.B) {
	rng := newRNG(22)
	ps := make([]Pos, 1000)
	for i := range ps {
		ps[i] = randPos(rng)
	}
	target := randPos(rng)
	for b.Loop() {
		ClosestIndices(target, ps, 50)
	}
}
