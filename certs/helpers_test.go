package certs

import (
	"crypto/ed25519"
	"crypto/x509"
	"io"
	mrand "math/rand/v2"
	"testing"
	"time"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// detRand returns a deterministic random source for reproducible keys and
// serials.
func detRand(seed byte) io.Reader {
	var s [32]byte
	s[0] = seed
	return mrand.NewChaCha8(s)
}

// fixture is a CA with a few issued leaves, built deterministically.
type fixture struct {
	ca       *Authority
	nodeKey  ed25519.PrivateKey
	node     *x509.Certificate
	project  *x509.Certificate
	client   *x509.Certificate
	otherCA  *Authority // unrelated CA with a different name
	sameName *Authority // unrelated CA with the same name as ca
	foreign  *x509.Certificate
}

// mustKey generates a deterministic key.
func mustKey(tb testing.TB, seed byte) ed25519.PrivateKey {
	tb.Helper()
	k, err := GenerateKey(detRand(seed))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// mustIssue issues a certificate valid for [t0-1h, t0+24h].
func mustIssue(tb testing.TB, a *Authority, pub ed25519.PublicKey, role Role, name string) *x509.Certificate {
	tb.Helper()
	c, err := a.Issue(IssueRequest{
		PublicKey: pub, Role: role, Name: name,
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(24 * time.Hour),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// newFixture builds the standard fixture.
func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	f := &fixture{}
	var err error
	if f.ca, err = NewAuthority("U.P. Test CA", t0.Add(-48*time.Hour), 10*365*24*time.Hour, detRand(1)); err != nil {
		tb.Fatal(err)
	}
	if f.otherCA, err = NewAuthority("Evil CA", t0.Add(-48*time.Hour), 365*24*time.Hour, detRand(2)); err != nil {
		tb.Fatal(err)
	}
	if f.sameName, err = NewAuthority("U.P. Test CA", t0.Add(-48*time.Hour), 365*24*time.Hour, detRand(3)); err != nil {
		tb.Fatal(err)
	}
	f.nodeKey = mustKey(tb, 10)
	pub := func(seed byte) ed25519.PublicKey { return mustKey(tb, seed).Public().(ed25519.PublicKey) }
	f.node = mustIssue(tb, f.ca, f.nodeKey.Public().(ed25519.PublicKey), RoleNode, "node-1")
	f.project = mustIssue(tb, f.ca, pub(11), RoleProject, "project-1")
	f.client = mustIssue(tb, f.ca, pub(12), RoleClient, "client-1")
	f.foreign = mustIssue(tb, f.otherCA, pub(13), RoleNode, "node-foreign")
	return f
}
