package keystore

import (
	"os"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// FuzzLoadPeerKey writes arbitrary bytes into peer.key of a valid data
// directory and loads it: Load must never panic, and it may succeed only
// when the bytes hold the directory's own peer key.
func FuzzLoadPeerKey(f *testing.F) {
	_, p := certified(f, 2)
	good, err := os.ReadFile(p.PeerKey())
	if err != nil {
		f.Fatal(err)
	}
	id, err := Load(p.Dir, p.Role, t0)
	if err != nil {
		f.Fatal(err)
	}
	want := id.PeerKey
	other, _, _ := crypto.GenerateEd25519Key(detRand(99))
	f.Add(good)
	f.Add(peerKeyPEM(f, other))
	f.Add(append([]byte("junk before\n"), good...))
	f.Add(good[:len(good)/2])
	// The directory's public key with a damaged secret half: same peer ID.
	raw, err := want.Raw()
	if err != nil {
		f.Fatal(err)
	}
	raw[1] ^= 0x80
	if bad, err := crypto.UnmarshalEd25519PrivateKey(raw); err == nil {
		f.Add(peerKeyPEM(f, bad))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(p.PeerKey(), data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Load(p.Dir, p.Role, t0)
		if err != nil {
			return
		}
		if !got.PeerKey.Equals(want) || got.PeerID != id.PeerID {
			t.Fatalf("Load accepted peer key %x (peer %s), not the directory's own", data, got.PeerID)
		}
	})
}
