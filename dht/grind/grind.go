// Package grind finds libp2p identities whose Kademlia position (sha256 of the
// peer ID) lies in a given prefix region: how a node moves to a chosen place
// of the keyspace. Secp256k1 candidates are produced by batched point
// addition: one affine addition and a share of one field inversion per point,
// and six candidates per point through the curve's endomorphism and negation,
// so the sha256 of the peer ID is about half of the cost of a candidate.
//
// A b-bit region takes about 2^b candidates on average (geometrically
// distributed): 16 bits ~65k, 20 bits ~1M, 24 bits ~16M.
//
// The peer ID of a secp256k1 key is, as go-libp2p forms it, the identity
// multihash (00 25) of the protobuf PublicKey{Type: Secp256k1, Data: the
// 33-byte compressed point} (08 02 12 21 ...), 39 bytes in all; an Ed25519
// key's is 00 24 08 01 12 20 followed by the 32-byte key, 38 bytes. Both are
// inlined because they are at most 42 bytes long.
package grind

import (
	"context"
	"errors"
	"io"
	"math"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
)

// Result is a found identity: its private key, its peer ID (whose
// keyspace.PeerPos lies in the requested region), how many candidates were
// tried across all workers and how long the search took. When a search is
// cut short by its context, Tries and Elapsed are still set and Key and ID
// are zero.
type Result struct {
	Key     crypto.PrivKey
	ID      peer.ID
	Tries   uint64
	Elapsed time.Duration
}

// Grinder finds identities in a region. Implementations: Secp256k1 (fast),
// and a simple Ed25519 one (keygen per try, for comparison).
type Grinder interface {
	Grind(ctx context.Context, target keyspace.Region) (Result, error)
}

// ErrMismatch is returned if a found key does not reproduce the peer ID it
// was found under; it means a bug, never bad luck.
var ErrMismatch = errors.New("grind: found key does not match its peer ID")

// Rate measures candidates per second of g, all its workers together, over
// about d (for `up bench`): it searches a 256-bit region, which no candidate
// will ever hit, until d has passed, and divides the tries by the time taken.
// It returns 0 if the search failed for any other reason than its deadline.
func Rate(g Grinder, d time.Duration) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var unreachable keyspace.Pos
	for i := range unreachable {
		unreachable[i] = 0x5a
	}
	res, err := g.Grind(ctx, keyspace.NewRegion(unreachable, keyspace.Bits))
	if err == nil {
		// A 2^-256 event; count it as a normal finish.
		err = context.DeadlineExceeded
	}
	if !errors.Is(err, context.DeadlineExceeded) || res.Elapsed <= 0 {
		return 0
	}
	return float64(res.Tries) / res.Elapsed.Seconds()
}

// Expected returns the mean number of candidates needed to hit a region of
// the given prefix length: 2^bits (bits clamped to [0, 256]).
func Expected(bits int) float64 {
	return math.Ldexp(1, min(max(bits, 0), keyspace.Bits))
}

// Ed25519 is a simple grinder that generates an Ed25519 key per candidate
// on a single goroutine. It is 1-2 orders of magnitude slower than
// Secp256k1 and exists for comparison and for nodes that must stay Ed25519.
type Ed25519 struct {
	// Rand supplies the 32-byte seeds; nil means crypto/rand. A seeded
	// reader makes a search replay.
	Rand io.Reader
}

// ed25519Prefix is the identity multihash header and protobuf header of an
// Ed25519 peer ID: 00 24 | 08 01 12 20.
var ed25519Prefix = [6]byte{0x00, 0x24, 0x08, 0x01, 0x12, 0x20}

// secp256k1Prefix is the identity multihash header and protobuf header of a
// secp256k1 peer ID: 00 25 | 08 02 12 21; the compressed point follows.
var secp256k1Prefix = [6]byte{0x00, 0x25, 0x08, 0x02, 0x12, 0x21}

// checkKey verifies that key's peer ID, as go-libp2p computes it, is id.
func checkKey(key crypto.PrivKey, id []byte) (peer.ID, error) {
	got, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return "", err
	}
	if string(got) != string(id) {
		return "", ErrMismatch
	}
	return got, nil
}
