package overlay

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/certs"
)

// TestHelloOverQUIC: two hosts listening on QUIC only (loopback UDP)
// connect over QUIC and complete the hello; admission is the same as on
// TCP, as it binds the position record to the peer ID the QUIC handshake
// (TLS 1.3) proved.
func TestHelloOverQUIC(t *testing.T) {
	ca := newCA(t, 1)
	quicEndpoint := func(seed uint64) *Endpoint {
		key, _, err := crypto.GenerateEd25519Key(detRand(seed + 7000))
		if err != nil {
			t.Fatal(err)
		}
		h, err := NewHost(HostConfig{Key: key, Listen: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/udp/0/quic-v1")}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		acc := newAccount(t, ca, certs.RoleNode, seed+100, now.Add(-time.Hour), now.Add(24*time.Hour))
		pos := certs.SignPosition(acc.key, certs.Position{PeerID: []byte(h.ID()), Seq: 1, IssuedAt: now})
		e, err := New(h, Config{Verifier: certs.NewVerifier(ca.Cert), Cert: acc.cert.Raw, Position: pos.Marshal(),
			HelloTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(); _ = h.Close() })
		return e
	}
	a, b := quicEndpoint(1), quicEndpoint(2)
	for _, addr := range b.Raw().Addrs() {
		if _, err := addr.ValueForProtocol(multiaddr.P_QUIC_V1); err != nil {
			t.Fatalf("b listens on %s, not QUIC", addr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm, err := a.Join(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Raw().Addrs()})
	if err != nil {
		t.Fatalf("join over QUIC: %v", err)
	}
	if adm.Peer != b.ID() || adm.Role() != certs.RoleNode {
		t.Fatalf("admitted %s as %s, want %s as node", adm.Peer, adm.Role(), b.ID())
	}
	conns := a.Raw().Network().ConnsToPeer(b.ID())
	if len(conns) == 0 {
		t.Fatal("no connection to b")
	}
	for _, c := range conns {
		if _, err := c.RemoteMultiaddr().ValueForProtocol(multiaddr.P_QUIC_V1); err != nil {
			t.Fatalf("connection to b on %s, not QUIC", c.RemoteMultiaddr())
		}
	}
	// b admitted a in turn.
	deadline := time.Now().Add(10 * time.Second)
	for !b.Admission().IsAdmitted(a.ID(), certs.RoleNode) {
		if time.Now().After(deadline) {
			t.Fatal("b did not admit a")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
