package testnet_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// impostorCert builds the DER certificate and account key an impostor
// presents, for one way of being wrong.
func impostorCert(t *testing.T, net *testnet.Network, kind string) ([]byte, ed25519.PrivateKey) {
	t.Helper()
	key, err := certs.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	now := time.Now()
	issue := func(ca *certs.Authority, role certs.Role, nb, na time.Time) []byte {
		c, err := ca.Issue(certs.IssueRequest{PublicKey: pub, Role: role, Name: "impostor", NotBefore: nb, NotAfter: na})
		if err != nil {
			t.Fatal(err)
		}
		return c.Raw
	}
	switch kind {
	case "forged":
		der := issue(net.CA, certs.RoleNode, now.Add(-time.Hour), now.Add(time.Hour))
		der[len(der)-5] ^= 0x40 // inside the signature
		return der, key
	case "other CA":
		other, err := certs.NewAuthority("testnet CA", now.Add(-time.Hour), time.Hour*24, nil)
		if err != nil {
			t.Fatal(err)
		}
		return issue(other, certs.RoleNode, now.Add(-time.Hour), now.Add(time.Hour)), key
	case "wrong role":
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(424242),
			Subject:      pkix.Name{CommonName: "impostor", OrganizationalUnit: []string{"admin"}},
			NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, net.CA.Cert, pub, net.CA.Key)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	case "expired":
		return issue(net.CA, certs.RoleNode, now.Add(-48*time.Hour), now.Add(-24*time.Hour)), key
	case "revoked":
		// A good certificate, revoked on every node before it is shown.
		der := issue(net.CA, certs.RoleNode, now.Add(-time.Hour), now.Add(time.Hour))
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		rl, err := net.CA.Revoke(nil, []*big.Int{c.SerialNumber}, now, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, nd := range net.Live() {
			nd.Endpoint().AdoptCRL(rl)
			if !nd.Endpoint().Admission().Verifier().IsRevoked(c.SerialNumber) {
				t.Fatalf("%s did not adopt the revocation list", nd.Name())
			}
		}
		return der, key
	}
	t.Fatalf("unknown kind %q", kind)
	return nil, nil
}

// sendHello runs the dialer's side of the handshake by hand and returns
// the node's verdict.
func sendHello(ctx context.Context, h host.Host, p peer.ID, hello *wire.Hello) error {
	s, err := h.NewStream(ctx, p, wire.ProtoHello)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := wire.WriteFrame(s, hello); err != nil {
		return err
	}
	_ = s.CloseWrite()
	var rep wire.Reply
	if err := wire.ReadFrame(bufio.NewReader(s), wire.MaxHelloFrame, &rep); err != nil {
		return err
	}
	if rep.Status != wire.StatusOK {
		return &wire.Error{Status: rep.Status, Msg: rep.Msg}
	}
	return nil
}

func inAnyRoutingTable(net *testnet.Network, p peer.ID) string {
	for _, nd := range net.Live() {
		for _, q := range nd.DHT().RoutingTablePeers() {
			if q == p {
				return nd.Name()
			}
		}
	}
	return ""
}

// TestAdmissionRefusesImpostors: a peer without a certificate, or with a
// forged one, one from another CA, a wrong role, an expired or a revoked
// one never enters a routing table, though it runs kad-dht and tries to,
// and is refused on every /up/ protocol.
func TestAdmissionRefusesImpostors(t *testing.T) {
	for _, tr := range []struct {
		name string
		t    testnet.Transport
	}{{"mocknet", testnet.Mocknet}, {"tcp", testnet.TCP}} {
		t.Run(tr.name, func(t *testing.T) { testImpostors(t, tr.t) })
	}
}

func testImpostors(t *testing.T, tr testnet.Transport) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 8, Seed: 3, HelloTimeout: 2 * time.Second, Transport: tr})
	target := net.Node(0)
	// "revoked" last: it leaves a revocation list on every node.
	for _, kind := range []string{"no certificate", "forged", "other CA", "wrong role", "expired", "revoked"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pk, _, err := crypto.GenerateEd25519Key(nil)
			if err != nil {
				t.Fatal(err)
			}
			h, err := net.NewHost(pk)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			refusedBefore := overlay.CounterValue(target.Endpoint().Metrics().Admissions, "refused")
			var hello *wire.Hello
			if kind != "no certificate" {
				// The impostor speaks the handshake, with its bad credentials.
				der, key := impostorCert(t, net, kind)
				pos := certs.SignPosition(key, certs.Position{PeerID: []byte(h.ID()), Seq: 1, IssuedAt: time.Now()})
				hello = &wire.Hello{Version: wire.HelloVersion, Cert: der, Position: pos.Marshal()}
				h.SetStreamHandler(wire.ProtoHello, func(s network.Stream) {
					defer s.Close()
					var theirs wire.Hello
					if wire.ReadFrame(bufio.NewReader(s), wire.MaxHelloFrame, &theirs) != nil {
						return
					}
					body, _ := wire.Marshal(hello)
					_ = wire.WriteFrame(s, &wire.Reply{Status: wire.StatusOK, Body: body})
				})
			}
			// The impostor runs a real kad-dht server, so the nodes' kad-dht
			// would add it were it not for the routing-table filter.
			kad := startKad(t, h)
			if err := h.Connect(ctx, target.AddrInfo()); err != nil {
				t.Fatalf("connect: %v", err)
			}
			if hello != nil {
				if err := sendHello(ctx, h, target.ID(), hello); err == nil {
					t.Fatalf("hello with %s certificate accepted", kind)
				}
			}
			testkit.WaitFor(t, 10*time.Second, "the node to refuse the impostor", func() bool {
				return overlay.CounterValue(target.Endpoint().Metrics().Admissions, "refused") > refusedBefore
			})
			checkAllRefused(t, ctx, h, target, kind+" impostor")
			if _, ok := target.Endpoint().Admission().Get(h.ID()); ok {
				t.Fatalf("%s impostor admitted", kind)
			}
			pushIntoRoutingTables(t, ctx, net, h, kad)
			neverInRoutingTable(t, net, h.ID(), time.Second, kind+" impostor")
		})
	}
}

// TestAdmittedProjectNotInRoutingTable: a valid project certificate is
// admitted for RPCs but never enters a routing table.
func TestAdmittedProjectNotInRoutingTable(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 4, Seed: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proj, err := net.NewParty(certs.RoleProject, "proj")
	if err != nil {
		t.Fatal(err)
	}
	h, err := net.NewHost(proj.PeerKey)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ep, err := overlay.New(h, overlay.Config{Verifier: proj.NewVerifier(), Cert: proj.Cert.Raw, Position: proj.Position.Marshal()})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	// The project runs a real kad-dht server: only the routing-table
	// filter keeps the nodes' kad-dht from adding it.
	kad := startKad(t, h)
	target := net.Node(0)
	if err := h.Connect(ctx, target.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	if _, err := ep.WaitAdmitted(ctx, target.ID()); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "node admits project", func() bool {
		return target.Endpoint().Admission().IsAdmitted(h.ID(), certs.RoleProject)
	})
	// The probe reaches every handler: an admitted project gets a reply on
	// each /up/ protocol, served or refused for its role, and is served
	// the overlay's open ones.
	res := probeAll(ctx, h, target)
	for pid, r := range res {
		if !r.replied {
			t.Errorf("admitted project got no reply on %s: %s", pid, r.how)
		}
	}
	for _, pid := range []protocol.ID{wire.ProtoNear, wire.ProtoCRL, wire.DHTProtocol} {
		if !res[pid].served {
			t.Fatalf("admitted project refused on %s: %s", pid, res[pid].how)
		}
	}
	pushIntoRoutingTables(t, ctx, net, h, kad)
	neverInRoutingTable(t, net, h.ID(), time.Second, "project peer")
}

// TestRevocationDropsNode: a certified node joins and enters routing
// tables; the CA revokes it; one node is handed the list, which spreads to
// all; the revoked node leaves every routing table and is refused.
func TestRevocationDropsNode(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 6, Seed: 5})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := net.NewParty(certs.RoleNode, "victim")
	if err != nil {
		t.Fatal(err)
	}
	h, err := net.NewHost(id.PeerKey)
	if err != nil {
		t.Fatal(err)
	}
	victim, err := node.Open(node.Config{DataDir: id.Dir, Host: h})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	var peers []peer.AddrInfo
	for _, nd := range net.Live() {
		peers = append(peers, nd.AddrInfo())
	}
	if err := victim.Join(ctx, peers); err != nil {
		t.Fatal(err)
	}
	if name := inAnyRoutingTable(net, victim.ID()); name == "" {
		t.Fatal("certified node entered no routing table")
	}

	rl, err := net.CA.Revoke(nil, []*big.Int{id.Cert.SerialNumber}, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !net.Node(0).Endpoint().AdoptCRL(rl) {
		t.Fatal("node 0 did not adopt the revocation list")
	}
	testkit.WaitFor(t, 30*time.Second, "revocation list on every node and victim in no routing table", func() bool {
		for _, nd := range net.Live() {
			cur := nd.Endpoint().Admission().Verifier().RevocationList()
			if cur == nil || cur.Number.Cmp(rl.Number) != 0 {
				return false
			}
		}
		return inAnyRoutingTable(net, victim.ID()) == ""
	})
	if name := inAnyRoutingTable(net, victim.ID()); name != "" {
		t.Fatalf("revoked node still in routing table of %s", name)
	}
	for _, nd := range net.Live() {
		if _, ok := nd.Endpoint().Admission().Get(victim.ID()); ok {
			t.Fatalf("revoked node still admitted by %s", nd.Name())
		}
	}
	checkAllRefused(t, ctx, h, net.Node(1), "revoked node")
}
