package keyspace

import (
	"fmt"
	"math/big"
	"testing"
)

var testBits = []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 128, 200, 255, 256}

// bigFirstLast computes a region's extremes with math/big.
func bigFirstLast(c Pos, bits int) (Pos, Pos) {
	free := uint(Bits - bits)
	first := new(big.Int).Lsh(new(big.Int).Rsh(big256(c), free), free)
	span := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), free), big.NewInt(1))
	return fromBig(first), fromBig(new(big.Int).Add(first, span))
}

func TestNewRegionClampsAndMasks(t *testing.T) {
	c := IndexCentre("gpu")
	cases := []struct {
		bits, wantBits int
		str            string
	}{
		{-5, 0, "/0"},
		{0, 0, "/0"},
		{1, 1, "8/1"},
		{4, 4, "9/4"},
		{5, 5, "98/5"},
		{16, 16, "9eb6/16"},
		{256, 256, c.String() + "/256"},
		{999, 256, c.String() + "/256"},
	}
	for _, tc := range cases {
		r := NewRegion(c, tc.bits)
		if r.Bits != tc.wantBits || r.String() != tc.str {
			t.Errorf("NewRegion(c,%d) = %+v %q, want bits %d %q", tc.bits, r, r.String(), tc.wantBits, tc.str)
		}
		first, _ := bigFirstLast(c, tc.wantBits)
		if r.Prefix != first {
			t.Errorf("NewRegion(c,%d).Prefix = %v, want free bits zeroed %v", tc.bits, r.Prefix, first)
		}
	}
}

func TestRegionContainsBruteForce(t *testing.T) {
	rng := newRNG(10)
	for _, bits := range testBits {
		c := randPos(rng)
		r := NewRegion(c, bits)
		// A literal with junk beyond Bits behaves the same.
		lit := Region{Prefix: c, Bits: bits}
		for i := 0; i < 300; i++ {
			p := nearPos(rng, c, rng.IntN(Bits+1))
			want := bruteCPL(p, c) >= bits
			if r.Contains(p) != want || lit.Contains(p) != want {
				t.Fatalf("bits %d: Contains(%v) != %v", bits, p, want)
			}
		}
	}
}

func TestRegionRandomPointFirstLast(t *testing.T) {
	rng := newRNG(11)
	for _, bits := range testBits {
		for k := 0; k < 5; k++ {
			c := randPos(rng)
			for _, r := range []Region{NewRegion(c, bits), {Prefix: c, Bits: bits}} {
				first, last := r.First(), r.Last()
				wf, wl := bigFirstLast(c, bits)
				if first != wf || last != wl {
					t.Fatalf("%v: First/Last = %v %v, want %v %v", r, first, last, wf, wl)
				}
				if !r.Contains(first) || !r.Contains(last) {
					t.Fatalf("%v: First/Last not contained", r)
				}
				below := new(big.Int).Sub(big256(first), big.NewInt(1))
				if below.Sign() >= 0 && r.Contains(fromBig(below)) {
					t.Fatalf("%v: First-1 contained", r)
				}
				above := new(big.Int).Add(big256(last), big.NewInt(1))
				if above.BitLen() <= Bits && r.Contains(fromBig(above)) {
					t.Fatalf("%v: Last+1 contained", r)
				}
				for i := 0; i < 200; i++ {
					p := r.RandomPoint(rng)
					if !r.Contains(p) || Compare(p, first) < 0 || Compare(p, last) > 0 {
						t.Fatalf("%v: RandomPoint %v outside [%v,%v]", r, p, first, last)
					}
				}
			}
		}
	}
}

func TestRegionWholeAndSingleton(t *testing.T) {
	rng := newRNG(12)
	// Literals with Bits out of range behave as clamped.
	c0 := randPos(rng)
	over, under := Region{Prefix: c0, Bits: 300}, Region{Prefix: c0, Bits: -3}
	if !over.Contains(c0) || over.First() != c0 || over.Last() != c0 || over.RandomPoint(rng) != c0 {
		t.Fatalf("Region{Bits: 300} is not the singleton {c0}")
	}
	if !under.Contains(randPos(rng)) || under.First() != (Pos{}) {
		t.Fatalf("Region{Bits: -3} is not the whole keyspace")
	}
	whole := NewRegion(randPos(rng), 0)
	var zero Region
	var ones Pos
	for i := range ones {
		ones[i] = 0xff
	}
	for _, r := range []Region{whole, zero} {
		if r.First() != (Pos{}) || r.Last() != ones {
			t.Fatalf("%v: First/Last = %v %v", r, r.First(), r.Last())
		}
		for i := 0; i < 100; i++ {
			if !r.Contains(randPos(rng)) {
				t.Fatal("whole region misses a point")
			}
		}
	}
	c := randPos(rng)
	one := NewRegion(c, Bits)
	if one.First() != c || one.Last() != c || !one.Contains(c) {
		t.Fatalf("singleton %v wrong", one)
	}
	for i := 0; i < 100; i++ {
		if p := one.RandomPoint(rng); p != c {
			t.Fatalf("singleton RandomPoint = %v, want %v", p, c)
		}
		if q := nearPos(rng, c, rng.IntN(Bits)); one.Contains(q) {
			t.Fatalf("singleton contains %v", q)
		}
	}
}

func TestRandomPointDeterministic(t *testing.T) {
	r := IndexRegion("gpu", DefaultIndexBits)
	a, b := newRNG(13), newRNG(13)
	for i := 0; i < 50; i++ {
		if p, q := r.RandomPoint(a), r.RandomPoint(b); p != q {
			t.Fatalf("same seed gave %v and %v", p, q)
		}
	}
}

// TestRandomPointUniform checks that the free bits are uniform: the 4 bits
// right after the prefix fall evenly into 16 cells (chi-square), and every
// free bit is set about half the time. Seeded, with wide bounds.
func TestRandomPointUniform(t *testing.T) {
	rng := newRNG(14)
	for _, bits := range []int{0, 5, 16, 100, 252} {
		r := NewRegion(randPos(rng), bits)
		const n = 16000
		var cells [16]int
		ones := make([]int, Bits)
		for i := 0; i < n; i++ {
			p := r.RandomPoint(rng)
			cell := 0
			for j := 0; j < 4; j++ {
				cell = cell<<1 | p.Bit(bits+j)
			}
			cells[cell]++
			for j := bits; j < Bits; j++ {
				ones[j] += p.Bit(j)
			}
		}
		if chi2 := chiSquare16(cells, n); chi2 > 45 {
			t.Errorf("bits %d: chi-square %.1f over 16 cells %v", bits, chi2, cells)
		}
		for j := bits; j < Bits; j++ {
			// mean 8000, sd ~63: a 7-sd band.
			if ones[j] < 7560 || ones[j] > 8440 {
				t.Errorf("bits %d: free bit %d set %d/%d times", bits, j, ones[j], n)
			}
		}
	}
}

func TestFlipPrefix(t *testing.T) {
	x := IndexCentre("gpu") // 9eb6... = 1001 1110 1011 0110
	cases := []struct {
		d    int
		want string
	}{
		{-3, "0/1"},
		{0, "0/1"},
		{1, "c/2"},
		{3, "8/4"},
		{4, "90/5"},
		{15, "9eb7/16"},
	}
	for _, c := range cases {
		if got := FlipPrefix(x, c.d).String(); got != c.want {
			t.Errorf("FlipPrefix(x,%d) = %s, want %s", c.d, got, c.want)
		}
	}
	if r := FlipPrefix(x, 300); r.Bits != Bits || r.Prefix != x.FlipBit(Bits-1) {
		t.Errorf("FlipPrefix(x,300) = %v, want clamped to d=255", r)
	}
	rng := newRNG(15)
	for i := 0; i < 500; i++ {
		x := randPos(rng)
		d := rng.IntN(Bits)
		r := FlipPrefix(x, d)
		if r.Bits != d+1 {
			t.Fatalf("FlipPrefix bits = %d, want %d", r.Bits, d+1)
		}
		// Members are exactly the positions with CommonPrefixLen(y, x) == d.
		for k := 0; k < 20; k++ {
			y := nearPos(rng, x, rng.IntN(Bits+1))
			if r.Contains(y) != (bruteCPL(y, x) == d) {
				t.Fatalf("FlipPrefix(%v,%d).Contains(%v) wrong", x, d, y)
			}
			if y := r.RandomPoint(rng); CommonPrefixLen(y, x) != d {
				t.Fatalf("random point of FlipPrefix has cpl %d, want %d", CommonPrefixLen(y, x), d)
			}
		}
	}
}

func BenchmarkRandomPoint(b *testing.B) {
	rng := newRNG(16)
	r := IndexRegion("gpu", DefaultIndexBits)
	var sink Pos
	for b.Loop() {
		sink = r.RandomPoint(rng)
	}
	_ = sink
}

// TestPointFor: a seed's point lies in the region, is the same for every
// caller, differs between seeds, and the free bits spread evenly over 16
// cells (chi-square) like RandomPoint's. The control: the same seeds in
// another region give other points.
func TestPointFor(t *testing.T) {
	rng := newRNG(15)
	for _, bits := range []int{0, 5, 16, 100, 252} {
		r := NewRegion(randPos(rng), bits)
		other := NewRegion(randPos(rng), bits)
		const n = 16000
		var cells [16]int
		seen := map[Pos]bool{}
		moved := 0
		for i := 0; i < n; i++ {
			seed := []byte(fmt.Sprintf("job-%d/kw", i))
			p := r.PointFor(seed)
			if !r.Contains(p) {
				t.Fatalf("bits %d: point %v outside %v", bits, p, r)
			}
			if q := r.PointFor(append([]byte(nil), seed...)); q != p {
				t.Fatalf("bits %d: same seed gave %v and %v", bits, p, q)
			}
			if bits < 200 && seen[p] {
				t.Fatalf("bits %d: two seeds gave %v", bits, p)
			}
			seen[p] = true
			if other.PointFor(seed) != p {
				moved++
			}
			cell := 0
			for j := 0; j < 4 && bits+j < Bits; j++ {
				cell = cell<<1 | p.Bit(bits+j)
			}
			cells[cell]++
		}
		if bits+4 > Bits {
			continue
		}
		if chi2 := chiSquare16(cells, n); chi2 > 45 {
			t.Errorf("bits %d: chi-square %.1f over 16 cells %v", bits, chi2, cells)
		}
		if bits > 0 && moved != n {
			t.Errorf("bits %d: %d of %d seeds kept their point in another region", bits, n-moved, n)
		}
	}
}

// chiSquare16 is the chi-square statistic of n draws counted in 16 equal
// cells: 15 degrees of freedom, P(> 45) about 7e-5.
func chiSquare16(cells [16]int, n int) float64 {
	chi2 := 0.0
	for _, c := range cells {
		d := float64(c) - float64(n)/16
		chi2 += d * d / (float64(n) / 16)
	}
	return chi2
}
