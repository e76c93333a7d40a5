package overlay

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/certs"
)

// tcpEndpoint is an Endpoint of role node on a loopback TCP host.
func tcpEndpoint(t *testing.T, ca *certs.Authority, seed uint64) *Endpoint {
	t.Helper()
	return tcpEndpointClock(t, ca, seed, certs.RoleNode, nil)
}

// tcpEndpointClock is tcpEndpoint with a role and a protocol clock (nil:
// time.Now).
func tcpEndpointClock(t *testing.T, ca *certs.Authority, seed uint64, role certs.Role, clock func() time.Time) *Endpoint {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(detRand(seed + 7000))
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(HostConfig{Key: key, Listen: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/0")}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	acc := newAccount(t, ca, role, seed+100, now.Add(-time.Hour), now.Add(24*time.Hour))
	pos := certs.SignPosition(acc.key, certs.Position{PeerID: []byte(h.ID()), Seq: 1, IssuedAt: now})
	e, err := New(h, Config{Verifier: certs.NewVerifier(ca.Cert), Cert: acc.cert.Raw, Position: pos.Marshal(),
		HelloTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(); _ = h.Close() })
	return e
}

// TestJoinFollowsMovedNode: a bootstrap address that names a node's old
// peer ID (it has moved since) still joins: the dial learns the ID the
// host answers with and connects to it; admission then checks its
// certificate as usual.
func TestJoinFollowsMovedNode(t *testing.T) {
	ca := newCA(t, 1)
	a, b := tcpEndpoint(t, ca, 1), tcpEndpoint(t, ca, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stale := newPeerID(t, 99) // the ID b had before it moved
	adm, err := a.Join(ctx, peer.AddrInfo{ID: stale, Addrs: b.Raw().Addrs()})
	if err != nil {
		t.Fatalf("join via a stale ID: %v", err)
	}
	if adm.Peer != b.ID() {
		t.Fatalf("admitted %s, want %s", adm.Peer, b.ID())
	}
	// A host that is not there at all still fails.
	var nobody host.Host = b.Raw()
	addrs := nobody.Addrs()
	_ = b.Close()
	_ = nobody.Close()
	if _, err := Connect(ctx, a.Raw(), peer.AddrInfo{ID: stale, Addrs: addrs}); err == nil {
		t.Fatal("connected to a closed host")
	}
}
