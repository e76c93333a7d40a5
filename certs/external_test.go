package certs

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenSSLReadsPEM checks that the files this package writes are what
// openssl expects, and that openssl-made Ed25519 keys decode. Skipped when
// openssl is not on PATH.
func TestOpenSSLReadsPEM(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not on PATH")
	}
	f := newFixture(t)
	rl, err := f.ca.Revoke(nil, []*big.Int{f.node.SerialNumber, big.NewInt(4242)}, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyPEM, _ := EncodePrivateKeyPEM(f.nodeKey)
	pubPEM, _ := EncodePublicKeyPEM(f.nodeKey.Public().(ed25519.PublicKey))
	csrPEM, err := CreateRequest(f.nodeKey, "node-csr")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"ca.pem": EncodeCertPEM(f.ca.Cert), "node.pem": EncodeCertPEM(f.node), "crl.pem": rl.PEM(),
		"key.pem": keyPEM, "pub.pem": pubPEM, "csr.pem": csrPEM,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(openssl, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	expect := func(out string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("openssl output lacks %q:\n%s", w, out)
			}
		}
	}

	expect(run("x509", "-in", path("ca.pem"), "-text", "-noout", "-nameopt", "RFC2253"),
		"ED25519", "CN=U.P. Test CA", "OU=ca", "CA:TRUE, pathlen:0", "Certificate Sign, CRL Sign")
	expect(run("x509", "-in", path("node.pem"), "-text", "-noout", "-nameopt", "RFC2253"),
		"ED25519", "CN=node-1", "OU=node", "CA:FALSE", "Digital Signature", "Any Extended Key Usage")
	expect(run("crl", "-in", path("crl.pem"), "-text", "-noout"),
		"Certificate Revocation List", "X509v3 CRL Number", fmt.Sprintf("%X", f.node.SerialNumber), "1092") // 4242 = 0x1092
	expect(run("crl", "-in", path("crl.pem"), "-CAfile", path("ca.pem"), "-noout"), "verify OK")
	expect(run("verify", "-attime", fmt.Sprint(t0.Unix()), "-CAfile", path("ca.pem"), path("node.pem")), "OK")
	expect(run("pkey", "-in", path("key.pem"), "-text", "-noout"), "ED25519 Private-Key")
	expect(run("pkey", "-pubin", "-in", path("pub.pem"), "-text", "-noout"), "ED25519 Public-Key")
	expect(run("req", "-in", path("csr.pem"), "-verify", "-noout", "-subject"), "node-csr")

	// And the other way: an openssl-generated key and CSR.
	run("genpkey", "-algorithm", "ed25519", "-out", path("ossl.key"))
	b, _ := os.ReadFile(path("ossl.key"))
	k, err := DecodePrivateKeyPEM(b)
	if err != nil {
		t.Fatalf("openssl key: %v", err)
	}
	run("req", "-new", "-key", path("ossl.key"), "-subj", "/CN=ossl-node", "-out", path("ossl.csr"))
	b, _ = os.ReadFile(path("ossl.csr"))
	pub, name, err := ReadSubjectKey(b)
	if err != nil || name != "ossl-node" || !pub.Equal(k.Public()) {
		t.Fatalf("openssl CSR: %x %q %v", pub, name, err)
	}
}

// TestNoNetworkDependencies asserts that certs stays off the network stack:
// nothing from libp2p and nothing from net/http. Plain "net" is allowed
// because crypto/x509 imports it (for IP-address SANs and name constraints);
// it is a transitive dependency of any X.509 code and opens no connections by
// itself.
func TestNoNetworkDependencies(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(bytes.TrimSpace(out)))
	if len(deps) == 0 || deps[len(deps)-1] != "github.com/up-pool/up/certs" {
		t.Fatalf("unexpected go list output: %q", out)
	}
	for _, d := range deps {
		if strings.Contains(d, "libp2p") || d == "net/http" || strings.HasPrefix(d, "net/http/") {
			t.Errorf("certs depends on %s", d)
		}
	}
}
