package keystore

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// PeerSign signs msg with the party's peer identity key. An Ed25519 key
// (every key this package makes) signs through curve25519-voi on the
// key's raw bytes: Ed25519 signatures are deterministic (RFC 8032), so
// the bytes are those libp2p's own path through crypto/ed25519 gives
// (TestPeerSignAgreesWithLibp2p), at about half its cost — a node signs
// every claim reply, acceptance and quota ticket with this key. Other
// key types sign through libp2p.
func (id *Identity) PeerSign(msg []byte) ([]byte, error) {
	if id.PeerKey == nil {
		return nil, fmt.Errorf("sign as peer: no peer identity key")
	}
	if id.PeerKey.Type() != crypto.Ed25519 {
		return id.PeerKey.Sign(msg)
	}
	raw, err := id.PeerKey.Raw()
	if err != nil || len(raw) != voi.PrivateKeySize {
		return nil, fmt.Errorf("sign as peer: raw Ed25519 key of %d bytes: %v", len(raw), err)
	}
	return voi.Sign(voi.PrivateKey(raw), msg), nil
}
