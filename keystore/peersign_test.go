package keystore

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// TestPeerSignAgreesWithLibp2p: PeerSign gives byte for byte the
// signature libp2p's key gives, for Ed25519 and for another key type.
func TestPeerSignAgreesWithLibp2p(t *testing.T) {
	for _, typ := range []int{crypto.Ed25519, crypto.Secp256k1} {
		k, _, err := crypto.GenerateKeyPairWithReader(typ, 0, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id := &Identity{PeerKey: k}
		for _, msg := range [][]byte{nil, []byte("up/claim-reply/v2"), bytes.Repeat([]byte{9}, 5000)} {
			got, err := id.PeerSign(msg)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := k.GetPublic().Verify(msg, got); err != nil || !ok {
				t.Fatalf("key type %d: PeerSign's signature does not verify: %v", typ, err)
			}
			if typ != crypto.Ed25519 {
				continue // ECDSA signatures are randomised
			}
			want, err := k.Sign(msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("PeerSign differs from libp2p's Sign on a %d-byte message", len(msg))
			}
		}
	}
	if _, err := (&Identity{}).PeerSign([]byte("x")); err == nil {
		t.Fatal("signed with no key")
	}
}

func BenchmarkPeerSign(b *testing.B) {
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	id := &Identity{PeerKey: k}
	msg := bytes.Repeat([]byte{1}, 200)
	b.Run("voi", func(b *testing.B) {
		for range b.N {
			_, _ = id.PeerSign(msg)
		}
	})
	b.Run("libp2p", func(b *testing.B) {
		for range b.N {
			_, _ = k.Sign(msg)
		}
	})
}
