package dht_test

import (
	"bytes"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/wire"
)

// seedRecord is a well-formed peer record: a real peer ID and addresses.
func seedRecord(f *testing.F) wire.PeerRecord {
	f.Helper()
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(make([]byte, 64)))
	if err != nil {
		f.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		f.Fatal(err)
	}
	return wire.PeerRecord{ID: []byte(id), Addrs: [][]byte{
		multiaddr.StringCast("/ip4/127.0.0.1/tcp/4001").Bytes(),
		multiaddr.StringCast("/ip6/::1/tcp/4002").Bytes(),
		{0xff, 0x01}, // not an address
	}}
}

// FuzzNearResponse feeds arbitrary bytes to what a /up/near caller does
// with a response: decode it and parse every peer record. Nothing may
// panic; a parsed record keeps its ID bytes, and each address it keeps is
// one of the record's, byte for byte.
func FuzzNearResponse(f *testing.F) {
	rec := seedRecord(f)
	for _, resp := range []*wire.NearResponse{
		{Peers: []wire.PeerRecord{rec}},
		{Peers: []wire.PeerRecord{rec, {ID: []byte("not a peer id")}}},
		{},
	} {
		b, err := wire.Marshal(resp)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var resp wire.NearResponse
		if wire.Decode(b, &resp) != nil {
			return
		}
		for _, rec := range resp.Peers {
			ai, err := dht.ParsePeerRecord(rec)
			if err != nil {
				continue
			}
			if !bytes.Equal([]byte(ai.ID), rec.ID) {
				t.Fatalf("ID %x parsed as %x", rec.ID, []byte(ai.ID))
			}
			if len(ai.Addrs) > len(rec.Addrs) {
				t.Fatalf("%d addresses from %d", len(ai.Addrs), len(rec.Addrs))
			}
			for _, a := range ai.Addrs {
				found := false
				for _, raw := range rec.Addrs {
					found = found || bytes.Equal(a.Bytes(), raw)
				}
				if !found {
					t.Fatalf("address %s is none of the record's", a)
				}
			}
		}
	})
}
