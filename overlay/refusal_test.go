package overlay

import (
	"context"
	"errors"
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// refusalParty is an endpoint of n's network holding a certificate of
// issuer, valid [nb, na], that admits accept (every role when empty) and
// refuses the serials in revoked.
func refusalParty(t *testing.T, n *rpcNet, issuer *certs.Authority, role certs.Role, nb, na time.Time, accept []certs.Role, revoked ...*big.Int) (*Endpoint, testAccount) {
	t.Helper()
	h := n.host()
	acc := newAccount(t, issuer, role, n.next+100, nb, na)
	pos := certs.SignPosition(acc.key, certs.Position{PeerID: []byte(h.ID()), Seq: 1, IssuedAt: time.Now()})
	v := certs.NewVerifier(n.ca.Cert)
	if len(revoked) > 0 {
		rl, err := n.ca.Revoke(nil, revoked, time.Now().Add(-time.Minute), 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		v.SetRevocationList(rl)
	}
	e, err := New(h, Config{Verifier: v, Cert: acc.cert.Raw, Position: pos.Marshal(), Accept: accept,
		HelloTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e, acc
}

// TestJoinTellsWhyRefused: a party refused for its own certificate
// (another CA's, expired, revoked, a role not admitted) learns why from
// Join at once, as a *RefusedError about itself, instead of waiting for
// a hello that never comes.
func TestJoinTellsWhyRefused(t *testing.T) {
	now := time.Now()
	nodes := []certs.Role{certs.RoleNode}
	for _, c := range []struct {
		name string
		code wire.Refusal
	}{
		{"foreign CA", wire.RefusalForeignCA},
		{"expired", wire.RefusalExpired},
		{"revoked", wire.RefusalRevoked},
		{"wrong role", wire.RefusalWrongRole},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newRPCNet(t)
			issuer, role := n.ca, certs.RoleNode
			nb, na := now.Add(-time.Hour), now.Add(24*time.Hour)
			switch c.code {
			case wire.RefusalForeignCA:
				issuer = newCA(t, 99)
			case wire.RefusalExpired:
				nb, na = now.Add(-48*time.Hour), now.Add(-time.Hour)
			case wire.RefusalWrongRole:
				role = certs.RoleClient
			}
			refused, acc := refusalParty(t, n, issuer, role, nb, na, nil)
			var revoked []*big.Int
			if c.code == wire.RefusalRevoked {
				revoked = append(revoked, acc.cert.SerialNumber)
			}
			server, _ := refusalParty(t, n, n.ca, certs.RoleNode, now.Add(-time.Hour), now.Add(24*time.Hour), nodes, revoked...)
			n.link()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			_, err := refused.Join(ctx, peer.AddrInfo{ID: server.ID(), Addrs: server.Raw().Addrs()})
			var r *RefusedError
			if !errors.As(err, &r) || r.Code != c.code || !r.AboutUs() || r.Peer != server.ID() {
				t.Fatalf("join: %v, want a refusal %q by %s", err, c.code, server.ID())
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("refusal took %s", d)
			}
			if got, ok := RefusedAboutUs([]error{err, err}); !ok || got.Code != c.code {
				t.Errorf("RefusedAboutUs = %v, %v", got, ok)
			}
		})
	}
}

// TestRefusedAboutUs: only when every error is a refusal about this
// party's own certificate is it one.
func TestRefusedAboutUs(t *testing.T) {
	revoked := &RefusedError{Code: wire.RefusalRevoked}
	other := &RefusedError{Code: wire.RefusalOther}
	for _, c := range []struct {
		errs []error
		want bool
	}{
		{nil, false},
		{[]error{revoked}, true},
		{[]error{revoked, errors.New("dial: connection refused")}, false},
		{[]error{revoked, other}, false},
		{[]error{revoked, &RefusedError{Code: wire.RefusalForeignCA}}, true},
	} {
		if _, ok := RefusedAboutUs(c.errs); ok != c.want {
			t.Errorf("RefusedAboutUs(%v) = %v, want %v", c.errs, ok, c.want)
		}
	}
}
