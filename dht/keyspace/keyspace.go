// Package keyspace is U.P.'s position arithmetic: 256-bit positions, XOR
// distance, common prefixes, prefix regions and random points in them, and
// closest-of-a-set choices. It is pure: no I/O, no clock, randomness passed in.
//
// Positions are the ones go-libp2p-kad-dht uses: a peer sits at
// sha256(peer ID bytes) and a key at sha256(key bytes), exactly as
// go-libp2p-kbucket's ConvertPeerID and ConvertKey compute them, and the
// distance between two positions is their XOR read as a big-endian unsigned
// 256-bit integer.
package keyspace

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
)

// Bits is the width of a position in bits.
const Bits = 256

// IndexNamespace is the key prefix under which index keywords are hashed to
// their centres; see IndexCentre.
const IndexNamespace = "/up/idx/"

// Pos is a 256-bit position in the DHT keyspace. Byte 0 holds the most
// significant bits; bit 0 is the most significant bit of byte 0.
type Pos [32]byte

// ErrBadPos is wrapped by the errors ParsePos returns.
var ErrBadPos = errors.New("keyspace: bad position")

// PeerPos returns the position of a peer: sha256 of its peer ID bytes. It
// equals go-libp2p-kbucket's ConvertPeerID.
func PeerPos(peerID []byte) Pos { return sha256.Sum256(peerID) }

// KeyPos returns the position of a DHT key: sha256 of the key bytes. It
// equals go-libp2p-kbucket's ConvertKey.
func KeyPos(key []byte) Pos { return sha256.Sum256(key) }

// IndexCentre returns the centre of keyword's index region:
// KeyPos([]byte("/up/idx/" + keyword)).
func IndexCentre(keyword string) Pos {
	return KeyPos([]byte(IndexNamespace + keyword))
}

// DefaultIndexBits is the default p, the bits an index region shares with
// its keyword's centre: 4, so a keyword's entries and queries spread over
// 1/16 of the nodes at any network size. The design's first choice, 16,
// left one node carrying a busy keyword until balancing moved others in
// (1,024 simulated nodes, 30 jobs/s, balancing on: busiest node 8.4× the
// mean RPC/s over the run at p = 16, 5.1× at p = 6, 2.5× at p = 4; lookups
// 4 % of RPCs). The cost is a wider harvest walk: one near question per
// ~20 nodes of the region each harvest round.
const DefaultIndexBits = 4

// IndexRegion returns the wildcard region of keyword: the positions sharing
// the first bits bits with IndexCentre(keyword). Pass DefaultIndexBits for
// the default.
func IndexRegion(keyword string, bits int) Region {
	return NewRegion(IndexCentre(keyword), bits)
}

// String returns p as 64 lower-case hex characters.
func (p Pos) String() string { return hex.EncodeToString(p[:]) }

// Short returns the first 8 hex characters of p, for logs.
func (p Pos) Short() string { return hex.EncodeToString(p[:4]) }

// ParsePos parses exactly 64 hex characters (either case) into a position.
func ParsePos(s string) (Pos, error) {
	var p Pos
	if len(s) != 2*len(p) {
		return Pos{}, fmt.Errorf("%w: want %d hex characters, got %d", ErrBadPos, 2*len(p), len(s))
	}
	if _, err := hex.Decode(p[:], []byte(s)); err != nil {
		return Pos{}, fmt.Errorf("%w: %v", ErrBadPos, err)
	}
	return p, nil
}

// Bit returns bit i of p (0 or 1); bit 0 is the most significant bit of
// byte 0. It panics if i is outside [0, Bits).
func (p Pos) Bit(i int) int {
	if i < 0 || i >= Bits {
		panic(fmt.Sprintf("keyspace: bit index %d out of range [0,%d)", i, Bits))
	}
	return int(p[i>>3]>>(7-uint(i&7))) & 1
}

// FlipBit returns p with bit i inverted. It panics if i is outside [0, Bits).
func (p Pos) FlipBit(i int) Pos {
	if i < 0 || i >= Bits {
		panic(fmt.Sprintf("keyspace: bit index %d out of range [0,%d)", i, Bits))
	}
	p[i>>3] ^= 0x80 >> uint(i&7)
	return p
}

// Xor returns p XOR q.
func (p Pos) Xor(q Pos) Pos {
	for i := range p {
		p[i] ^= q[i]
	}
	return p
}

// IsZero reports whether p is the all-zero position.
func (p Pos) IsZero() bool { return p == Pos{} }

// Distance returns the XOR distance a XOR b.
func Distance(a, b Pos) Pos { return a.Xor(b) }

// Compare compares a and b as big-endian unsigned integers, returning -1, 0
// or +1.
func Compare(a, b Pos) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// cmpDist compares the XOR distances of a and b to target without building
// them: -1 if a is closer, +1 if b is closer, 0 if a == b.
func cmpDist(target, a, b *Pos) int {
	for i := range target {
		da, db := target[i]^a[i], target[i]^b[i]
		if da != db {
			if da < db {
				return -1
			}
			return 1
		}
	}
	return 0
}

// CloserTo reports whether a is strictly closer to target than b in XOR
// distance.
func CloserTo(target, a, b Pos) bool { return cmpDist(&target, &a, &b) < 0 }

// CommonPrefixLen returns the number of leading bits a and b share, 0..256.
func CommonPrefixLen(a, b Pos) int {
	for i := range a {
		if x := a[i] ^ b[i]; x != 0 {
			return 8*i + bits.LeadingZeros8(x)
		}
	}
	return Bits
}

// Seed derives a 64-bit seed from a peer ID and a salt, so every party
// draws its own random stream that still replays for the same identity.
func Seed(peerID []byte, salt uint64) uint64 {
	p := PeerPos(peerID)
	return binary.BigEndian.Uint64(p[:8]) ^ salt
}
