package grind

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/up-pool/up/dht/keyspace"
)

// ed25519CheckEvery is how many candidates the Ed25519 grinder tries between
// looks at its context.
const ed25519CheckEvery = 64

// Grind generates Ed25519 keys from seeds read from g.Rand until one's peer
// ID position lies in target, or ctx is done (then it returns ctx.Err() with
// Tries and Elapsed set). The seed is read by Grind itself and expanded with
// ed25519.NewKeyFromSeed, because since Go 1.26 ed25519.GenerateKey ignores
// its reader.
func (g Ed25519) Grind(ctx context.Context, target keyspace.Region) (Result, error) {
	start := time.Now()
	r := g.Rand
	if r == nil {
		r = rand.Reader
	}
	var (
		c     ed25519Candidate
		tries uint64
	)
	for {
		if tries%ed25519CheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return Result{Tries: tries, Elapsed: time.Since(start)}, err
			}
		}
		if err := c.next(r); err != nil {
			return Result{Tries: tries, Elapsed: time.Since(start)}, err
		}
		tries++
		if !target.Contains(keyspace.PeerPos(c.id[:])) {
			continue
		}
		key, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(c.seed[:]))
		if err != nil {
			return Result{Tries: tries, Elapsed: time.Since(start)}, err
		}
		id, err := checkKey(key, c.id[:])
		if err != nil {
			return Result{Tries: tries, Elapsed: time.Since(start)}, err
		}
		return Result{Key: key, ID: id, Tries: tries, Elapsed: time.Since(start)}, nil
	}
}

// ed25519Candidate holds one Ed25519 try: its seed and peer ID bytes.
type ed25519Candidate struct {
	seed [ed25519.SeedSize]byte
	id   [len(ed25519Prefix) + ed25519.PublicKeySize]byte
}

// next reads a fresh seed from r and fills in the candidate's peer ID.
func (c *ed25519Candidate) next(r io.Reader) error {
	if _, err := io.ReadFull(r, c.seed[:]); err != nil {
		return err
	}
	priv := ed25519.NewKeyFromSeed(c.seed[:])
	copy(c.id[:], ed25519Prefix[:])
	copy(c.id[len(ed25519Prefix):], priv[ed25519.SeedSize:])
	return nil
}
