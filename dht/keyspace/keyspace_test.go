package keyspace

import (
	"crypto/sha256"
	"errors"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// newRNG returns a deterministic generator for tests.
func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// randPos draws a uniform position.
func randPos(rng *rand.Rand) Pos {
	var p Pos
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// nearPos returns a position sharing exactly k leading bits with p (k < 256),
// or p itself for k == 256, with the bits after k random.
func nearPos(rng *rand.Rand, p Pos, k int) Pos {
	if k >= Bits {
		return p
	}
	q := randPos(rng)
	for i := 0; i < k; i++ {
		if bigBit(q, i) != bigBit(p, i) {
			q = setBigBit(q, i, bigBit(p, i))
		}
	}
	if bigBit(q, k) == bigBit(p, k) {
		q = setBigBit(q, k, 1-bigBit(p, k))
	}
	return q
}

// big256 reads p as a big-endian unsigned integer.
func big256(p Pos) *big.Int { return new(big.Int).SetBytes(p[:]) }

// fromBig writes a non-negative integer < 2^256 as a position.
func fromBig(b *big.Int) Pos {
	var p Pos
	b.FillBytes(p[:])
	return p
}

// bigBit is a brute-force Bit via math/big: bit i from the top.
func bigBit(p Pos, i int) int { return int(big256(p).Bit(Bits - 1 - i)) }

// setBigBit sets bit i (from the top) to v via math/big.
func setBigBit(p Pos, i, v int) Pos {
	return fromBig(new(big.Int).SetBit(big256(p), Bits-1-i, uint(v)))
}

// bruteCPL counts shared leading bits one at a time.
func bruteCPL(a, b Pos) int {
	for i := 0; i < Bits; i++ {
		if bigBit(a, i) != bigBit(b, i) {
			return i
		}
	}
	return Bits
}

// bigDist is the XOR distance as a big integer.
func bigDist(a, b Pos) *big.Int { return new(big.Int).Xor(big256(a), big256(b)) }

func TestPeerKeyPosAreSHA256(t *testing.T) {
	rng := newRNG(1)
	for i := 0; i < 200; i++ {
		b := make([]byte, rng.IntN(80))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		want := sha256.Sum256(b)
		if got := PeerPos(b); got != want {
			t.Fatalf("PeerPos(%x) = %v, want %x", b, got, want)
		}
		if got := KeyPos(b); got != want {
			t.Fatalf("KeyPos(%x) = %v, want %x", b, got, want)
		}
	}
}

// Vectors below were computed with `printf '%s' ... | sha256sum`.
func TestKnownVectors(t *testing.T) {
	cases := []struct {
		name string
		got  Pos
		want string
	}{
		{"PeerPos(QmPeer)", PeerPos([]byte("QmPeer")), "afce873c493212ba060328e3914b4e2873781dd12439ff1fc7ce0e490efed3f6"},
		{"IndexCentre(gpu)", IndexCentre("gpu"), "9eb6b97ed34790ab0d2ef84fabe52bdc1969b08431459e1c4e14447767b98ff4"},
		{"IndexCentre()", IndexCentre(""), "a85b3bca7806c661902cc6c6b4d1646c2623e5a9a186102bdb85f96938721dd1"},
		{"KeyPos(/up/idx/gpu)", KeyPos([]byte("/up/idx/gpu")), "9eb6b97ed34790ab0d2ef84fabe52bdc1969b08431459e1c4e14447767b98ff4"},
	}
	for _, c := range cases {
		if c.got.String() != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
	if got := IndexCentre("gpu").Short(); got != "9eb6b97e" {
		t.Errorf("Short = %q, want 9eb6b97e", got)
	}
	if got := IndexRegion("gpu", 16).String(); got != "9eb6/16" {
		t.Errorf("IndexRegion(gpu) = %s, want 9eb6/16", got)
	}
}

func TestParsePos(t *testing.T) {
	rng := newRNG(2)
	for i := 0; i < 100; i++ {
		p := randPos(rng)
		for _, s := range []string{p.String(), strings.ToUpper(p.String())} {
			q, err := ParsePos(s)
			if err != nil || q != p {
				t.Fatalf("ParsePos(%q) = %v, %v; want %v", s, q, err, p)
			}
		}
	}
	bad := []string{
		"",
		strings.Repeat("0", 63),
		strings.Repeat("0", 65),
		"0x" + strings.Repeat("0", 62),
		strings.Repeat("0", 63) + "g",
		strings.Repeat("0", 62) + " 0",
	}
	for _, s := range bad {
		if p, err := ParsePos(s); err == nil || !errors.Is(err, ErrBadPos) || p != (Pos{}) {
			t.Errorf("ParsePos(%q) = %v, %v; want zero and ErrBadPos", s, p, err)
		}
	}
}

func TestBitAndCommonPrefixLenBruteForce(t *testing.T) {
	rng := newRNG(3)
	for i := 0; i < 300; i++ {
		a := randPos(rng)
		for j := 0; j < Bits; j++ {
			if a.Bit(j) != bigBit(a, j) {
				t.Fatalf("%v.Bit(%d) = %d, want %d", a, j, a.Bit(j), bigBit(a, j))
			}
			if f := a.FlipBit(j); bruteCPL(a, f) != j || f.Bit(j) == a.Bit(j) {
				t.Fatalf("FlipBit(%d) of %v = %v", j, a, f)
			}
		}
		k := rng.IntN(Bits + 1)
		for _, b := range []Pos{randPos(rng), nearPos(rng, a, k), a} {
			want := bruteCPL(a, b)
			if got := CommonPrefixLen(a, b); got != want {
				t.Fatalf("CommonPrefixLen(%v, %v) = %d, want %d", a, b, got, want)
			}
			if got := CommonPrefixLen(b, a); got != want {
				t.Fatalf("CommonPrefixLen not symmetric")
			}
		}
		if got := CommonPrefixLen(a, nearPos(rng, a, k)); got != k {
			t.Fatalf("CommonPrefixLen with constructed prefix %d = %d", k, got)
		}
	}
}

func TestBitPanicsOutOfRange(t *testing.T) {
	for _, i := range []int{-1, Bits, Bits + 7} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Bit(%d) did not panic", i)
				}
			}()
			Pos{}.Bit(i)
		}()
	}
}

func TestDistanceAndCompare(t *testing.T) {
	rng := newRNG(4)
	for i := 0; i < 1000; i++ {
		a, b, c := randPos(rng), randPos(rng), randPos(rng)
		if i%3 == 0 {
			b = nearPos(rng, a, rng.IntN(Bits+1))
		}
		if Distance(a, b) != Distance(b, a) {
			t.Fatal("Distance not symmetric")
		}
		if !Distance(a, a).IsZero() {
			t.Fatal("Distance(a,a) != 0")
		}
		if fromBig(bigDist(a, b)) != Distance(a, b) || a.Xor(b).Xor(b) != a {
			t.Fatal("Distance/Xor wrong")
		}
		if got, want := Compare(a, b), big256(a).Cmp(big256(b)); got != want {
			t.Fatalf("Compare(%v,%v) = %d, want %d", a, b, got, want)
		}
		if Compare(a, a) != 0 {
			t.Fatal("Compare(a,a) != 0")
		}
		want := bigDist(c, a).Cmp(bigDist(c, b)) < 0
		if got := CloserTo(c, a, b); got != want {
			t.Fatalf("CloserTo(%v,%v,%v) = %v, want %v", c, a, b, got, want)
		}
		if CloserTo(c, a, a) {
			t.Fatal("CloserTo(c,a,a) is true")
		}
	}
}

func FuzzParsePos(f *testing.F) {
	f.Add(strings.Repeat("0", 64))
	f.Add(IndexCentre("gpu").String())
	f.Add(strings.ToUpper(IndexCentre("cpu").String()))
	f.Add("xyz")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePos(s)
		if err != nil {
			if p != (Pos{}) {
				t.Fatalf("error with non-zero position %v", p)
			}
			return
		}
		if !strings.EqualFold(p.String(), s) {
			t.Fatalf("ParsePos(%q).String() = %q", s, p.String())
		}
		q, err := ParsePos(p.String())
		if err != nil || q != p {
			t.Fatalf("round trip of %q: %v, %v", s, q, err)
		}
	})
}
