package node

import (
	"bytes"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/wire"
)

// FuzzPeerBookEntry feeds arbitrary bytes to the peer book's decoder (a
// store can be damaged). Nothing may panic, and an entry that decodes
// encodes back to one that decodes to the same peer and addresses.
func FuzzPeerBookEntry(f *testing.F) {
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(make([]byte, 64)))
	if err != nil {
		f.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		f.Fatal(err)
	}
	for _, rec := range []wire.PeerRecord{
		{ID: []byte(id), Addrs: [][]byte{multiaddr.StringCast("/ip4/10.0.0.1/tcp/4001").Bytes()}},
		{ID: []byte(id), Addrs: [][]byte{{0x04, 1, 2}}},
		{ID: []byte("junk")},
	} {
		b, err := wire.Marshal(&rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		ai, err := decodePeerEntry(b)
		if err != nil {
			return
		}
		rec := wire.PeerRecord{ID: []byte(ai.ID)}
		for _, a := range ai.Addrs {
			rec.Addrs = append(rec.Addrs, a.Bytes())
		}
		enc, err := wire.Marshal(&rec)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := decodePeerEntry(enc)
		if err != nil {
			t.Fatalf("re-encoded entry refused: %v", err)
		}
		if again.ID != ai.ID || len(again.Addrs) != len(ai.Addrs) {
			t.Fatalf("round trip %v became %v", ai, again)
		}
		for i := range ai.Addrs {
			if !ai.Addrs[i].Equal(again.Addrs[i]) {
				t.Fatalf("address %d: %s became %s", i, ai.Addrs[i], again.Addrs[i])
			}
		}
	})
}
