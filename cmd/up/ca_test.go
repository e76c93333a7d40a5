package main

import (
	"crypto/ed25519"
	"crypto/x509"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := certs.DecodeCertPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCAIssueFromPublicKey: 'up ca issue' certifies a bare PEM public key
// for the role and name given, valid for --days, verifiable against the
// CA; without --name it refuses, as the key names no subject.
func TestCAIssueFromPublicKey(t *testing.T) {
	f := newFixture(t)
	key, err := certs.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	pemKey, err := certs.EncodePublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, filepath.Join(f.dir, "alice.pub"), string(pemKey))
	out := filepath.Join(f.dir, "alice.crt")

	code, _, errs := upRun(t, "ca", "issue", "--dir", f.ca, "--role", "client", "--in", in, "--out", out)
	if code != 2 || !strings.Contains(errs, "give --name") {
		t.Fatalf("issue without a name: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("refused issue wrote a certificate")
	}

	stdout := mustRun(t, "ca", "issue", "--dir", f.ca, "--role", "client", "--in", in, "--out", out, "--name", "alice", "--days", "10")
	c := readCert(t, out)
	if !strings.Contains(stdout, fmt.Sprintf("serial %x", c.SerialNumber)) {
		t.Errorf("output %q does not give the serial %x", stdout, c.SerialNumber)
	}
	if got, ok := c.PublicKey.(ed25519.PublicKey); !ok || !got.Equal(pub) {
		t.Fatal("certificate is not for the given key")
	}
	if d := time.Until(c.NotAfter); d < 9*24*time.Hour || d > 10*24*time.Hour {
		t.Errorf("valid for %s more, want 10 days", d)
	}
	ca := readCert(t, filepath.Join(f.ca, "ca.crt"))
	v := certs.NewVerifier(ca)
	id, err := v.VerifyCert(c.Raw, time.Now(), certs.RoleClient)
	if err != nil {
		t.Fatalf("issued certificate does not verify: %v", err)
	}
	if id.Name != "alice" || id.Role != certs.RoleClient {
		t.Fatalf("verified as %q %s, want alice client", id.Name, id.Role)
	}
	if _, err := v.VerifyCert(c.Raw, time.Now(), certs.RoleNode); err == nil {
		t.Fatal("client certificate verified as a node's")
	}
}

// TestCARevoke: 'up ca revoke' by certificate and then by serial writes a
// signed list, numbered up each time, holding every serial revoked so
// far; --out writes the same list; a verifier with it refuses the
// certificates and accepts the others.
func TestCARevoke(t *testing.T) {
	f := newFixture(t)
	ca := readCert(t, filepath.Join(f.ca, "ca.crt"))
	n1 := readCert(t, filepath.Join(f.n1, "node.crt"))
	n2 := readCert(t, filepath.Join(f.n2, "node.crt"))
	crl := filepath.Join(f.ca, "crl.pem")
	load := func(path string) *certs.RevocationList {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rl, err := certs.ParseRevocationList(b, ca)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return rl
	}

	mustRun(t, "ca", "revoke", "--dir", f.ca, "--cert", filepath.Join(f.n1, "node.crt"))
	first := load(crl)
	if !first.IsRevoked(n1.SerialNumber) || first.IsRevoked(n2.SerialNumber) || len(first.Serials()) != 1 {
		t.Fatalf("first list revokes %v, want only n1's %x", first.Serials(), n1.SerialNumber)
	}

	out := filepath.Join(f.dir, "copy.pem")
	stdout := mustRun(t, "ca", "revoke", "--dir", f.ca, "--serial", fmt.Sprintf("%x", n2.SerialNumber), "--out", out)
	second := load(crl)
	if second.Number.Cmp(new(big.Int).Add(first.Number, big.NewInt(1))) != 0 {
		t.Fatalf("second list number %s after %s", second.Number, first.Number)
	}
	if !second.IsRevoked(n1.SerialNumber) || !second.IsRevoked(n2.SerialNumber) || len(second.Serials()) != 2 {
		t.Fatalf("second list revokes %v, want n1's and n2's", second.Serials())
	}
	if !strings.Contains(stdout, "2 revoked") {
		t.Errorf("output %q", stdout)
	}
	a, _ := os.ReadFile(crl)
	b, _ := os.ReadFile(out)
	if string(a) != string(b) {
		t.Fatal("--out copy differs from the CA's crl.pem")
	}

	v := certs.NewVerifier(ca)
	if !v.SetRevocationList(second) {
		t.Fatal("verifier did not take the list")
	}
	for _, c := range []*x509.Certificate{n1, n2} {
		if _, err := v.VerifyCert(c.Raw, time.Now(), certs.RoleNode); err == nil {
			t.Fatalf("revoked %s still verifies", c.Subject.CommonName)
		}
	}
	// A third, unrevoked node still verifies.
	n3 := filepath.Join(f.dir, "n3")
	mustRun(t, "node", "init", "--data", n3, "--ca", filepath.Join(f.ca, "ca.crt"), "--name", "n3")
	mustRun(t, "ca", "issue", "--dir", f.ca, "--role", "node", "--in", filepath.Join(n3, "node.csr"), "--out", filepath.Join(n3, "node.crt"))
	if _, err := v.VerifyCert(readCert(t, filepath.Join(n3, "node.crt")).Raw, time.Now(), certs.RoleNode); err != nil {
		t.Fatalf("unrevoked node refused: %v", err)
	}
}
