package keyspace

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
)

// Region is the set of positions sharing the first Bits bits with Prefix.
// Bits of Prefix beyond Bits are ignored (NewRegion zeroes them), and Bits is
// treated as clamped to [0, 256], so a Region literal is always usable. The
// zero Region is the whole keyspace.
type Region struct {
	Prefix Pos
	Bits   int
}

// NewRegion returns the region of positions sharing the first bits bits with
// centre. bits is clamped to [0, 256]; the Prefix has the bits beyond bits
// zeroed.
func NewRegion(centre Pos, bits int) Region {
	bits = clampBits(bits)
	return Region{Prefix: and(centre, prefixMask(bits)), Bits: bits}
}

// clampBits clamps n into [0, Bits].
func clampBits(n int) int { return min(max(n, 0), Bits) }

// prefixMask returns the position whose first n bits are 1 and the rest 0;
// n must be in [0, Bits].
func prefixMask(n int) Pos {
	var m Pos
	for i := 0; i < n/8; i++ {
		m[i] = 0xff
	}
	if n%8 != 0 {
		m[n/8] = ^byte(0xff >> uint(n%8))
	}
	return m
}

// and returns p AND m.
func and(p, m Pos) Pos {
	for i := range p {
		p[i] &= m[i]
	}
	return p
}

// norm returns r with Bits clamped and Prefix masked.
func (r Region) norm() Region { return NewRegion(r.Prefix, r.Bits) }

// Contains reports whether p shares the region's first Bits bits.
func (r Region) Contains(p Pos) bool {
	return CommonPrefixLen(p, r.Prefix) >= clampBits(r.Bits)
}

// RandomPoint returns a point drawn uniformly from the region: the prefix
// bits are the region's and the remaining 256-Bits bits come from rng. It
// draws exactly four Uint64s from rng whatever the region, so replays line
// up.
func (r Region) RandomPoint(rng *rand.Rand) Pos {
	var x Pos
	for i := 0; i < len(x); i += 8 {
		binary.BigEndian.PutUint64(x[i:], rng.Uint64())
	}
	r = r.norm()
	m := prefixMask(r.Bits)
	for i := range x {
		x[i] = r.Prefix[i] | x[i]&^m[i]
	}
	return x
}

// PointFor returns the region's point for seed: the prefix bits are the
// region's and the remaining 256-Bits bits are SHA-256(seed)'s. Every
// party that names the same seed finds the same point, and distinct
// seeds spread uniformly over the region (an index entry's point, named
// by its job and keyword, so that whichever node lists the job writes the
// entry at the same index node).
func (r Region) PointFor(seed []byte) Pos {
	x := Pos(sha256.Sum256(seed))
	r = r.norm()
	m := prefixMask(r.Bits)
	for i := range x {
		x[i] = r.Prefix[i] | x[i]&^m[i]
	}
	return x
}

// First returns the lowest position in the region: the prefix followed by
// zeros.
func (r Region) First() Pos { return r.norm().Prefix }

// Last returns the highest position in the region: the prefix followed by
// ones.
func (r Region) Last() Pos {
	r = r.norm()
	m := prefixMask(r.Bits)
	p := r.Prefix
	for i := range p {
		p[i] |= ^m[i]
	}
	return p
}

// String returns the region as "HEX/bits", where HEX is the first
// ceil(bits/4) hex digits of the prefix (a partial last digit shows the free
// bits as zero), e.g. "9eb6/16", "8/1"; the whole keyspace is "/0".
func (r Region) String() string {
	r = r.norm()
	digits := (r.Bits + 3) / 4
	return fmt.Sprintf("%s/%d", hex.EncodeToString(r.Prefix[:])[:digits], r.Bits)
}

// FlipPrefix returns the region X[0:d] + not X[d] (d+1 bits): where a
// newcomer must land to be strictly closer than x to exactly those positions
// whose bit d differs from x's bit d (see MovedBy and SplitPoint). d is
// clamped to [0, 255].
func FlipPrefix(x Pos, d int) Region {
	d = min(max(d, 0), Bits-1)
	return NewRegion(x.FlipBit(d), d+1)
}
