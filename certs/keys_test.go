package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRole(t *testing.T) {
	for _, r := range []Role{RoleCA, RoleNode, RoleProject, RoleClient} {
		got, err := ParseRole(string(r))
		if err != nil || got != r {
			t.Errorf("ParseRole(%q) = %q, %v", r, got, err)
		}
	}
	for _, s := range []string{"", "Node", "admin", "node "} {
		_, err := ParseRole(s)
		if err == nil {
			t.Errorf("ParseRole(%q) accepted", s)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `"`+s+`"`) || !strings.Contains(msg, "node, project, client") {
			t.Errorf("ParseRole(%q) error %q does not name the value and valid roles", s, msg)
		}
	}
}

func TestKeyPEMRoundTrip(t *testing.T) {
	k := mustKey(t, 5)
	privPEM, err := EncodePrivateKeyPEM(k)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(privPEM, []byte("-----BEGIN PRIVATE KEY-----")) {
		t.Fatalf("private key PEM header: %q", privPEM[:30])
	}
	k2, err := DecodePrivateKeyPEM(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Equal(k2) {
		t.Fatal("private key changed in round trip")
	}

	pub := k.Public().(ed25519.PublicKey)
	pubPEM, err := EncodePublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pubPEM, []byte("-----BEGIN PUBLIC KEY-----")) {
		t.Fatalf("public key PEM header: %q", pubPEM[:30])
	}
	pub2, err := DecodePublicKeyPEM(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(pub2) {
		t.Fatal("public key changed in round trip")
	}

	if _, err := EncodePrivateKeyPEM(k[:10]); err == nil {
		t.Error("short private key encoded")
	}
	if _, err := EncodePublicKeyPEM(pub[:10]); err == nil {
		t.Error("short public key encoded")
	}
}

func TestKeyPEMErrors(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPub, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	privPEM, _ := EncodePrivateKeyPEM(mustKey(t, 5))
	pubPEM, _ := EncodePublicKeyPEM(mustKey(t, 5).Public().(ed25519.PublicKey))
	withHeader := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: []byte{1}})

	privCases := map[string][]byte{
		"empty":       nil,
		"not PEM":     []byte("hello"),
		"wrong type":  pubPEM,
		"not ed25519": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}),
		"bad DER":     pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{0x30, 0x01}}),
		"encrypted":   withHeader,
		"too large":   append(bytes.Repeat([]byte(" "), MaxPEMSize), privPEM...),
	}
	for name, b := range privCases {
		if _, err := DecodePrivateKeyPEM(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("private %s: got %v, want ErrMalformed", name, err)
		}
	}
	pubCases := map[string][]byte{
		"empty":       nil,
		"wrong type":  privPEM,
		"not ed25519": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecPub}),
		"bad DER":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("xx")}),
	}
	for name, b := range pubCases {
		if _, err := DecodePublicKeyPEM(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("public %s: got %v, want ErrMalformed", name, err)
		}
	}
	_, err = DecodePrivateKeyPEM(pubPEM)
	if err == nil || !strings.Contains(err.Error(), `"PUBLIC KEY"`) {
		t.Errorf("wrong-type error should name the type found: %v", err)
	}
}

func TestCertPEMRoundTrip(t *testing.T) {
	f := newFixture(t)
	p := EncodeCertPEM(f.node)
	if !bytes.HasPrefix(p, []byte("-----BEGIN CERTIFICATE-----")) {
		t.Fatalf("cert PEM header: %q", p[:30])
	}
	c, err := DecodeCertPEM(p)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Equal(f.node) {
		t.Fatal("certificate changed in round trip")
	}
	// First CERTIFICATE block wins; other block types before it are skipped.
	keyPEM, _ := EncodePrivateKeyPEM(f.nodeKey)
	bundle := append(append(append([]byte{}, keyPEM...), p...), EncodeCertPEM(f.ca.Cert)...)
	c, err = DecodeCertPEM(bundle)
	if err != nil || !c.Equal(f.node) {
		t.Fatalf("bundle: got %v, %v", c, err)
	}

	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecCert := rawCert(t, leafTemplate("ec", "node"), leafTemplate("ec", "node"), &ec.PublicKey, ec)
	for name, b := range map[string][]byte{
		"empty":       nil,
		"garbage":     []byte("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"),
		"no cert":     keyPEM,
		"bad DER":     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{0x30, 0x03, 1, 2, 3}}),
		"not ed25519": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ecCert}),
	} {
		if _, err := DecodeCertPEM(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

func TestRequest(t *testing.T) {
	k := mustKey(t, 6)
	csr, err := CreateRequest(k, "node-7")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(csr, []byte("-----BEGIN CERTIFICATE REQUEST-----")) {
		t.Fatalf("CSR PEM header: %q", csr[:40])
	}
	pub, name, err := ParseRequest(csr)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(k.Public()) || name != "node-7" {
		t.Fatalf("ParseRequest = %x, %q", pub, name)
	}
	pub, name, err = ReadSubjectKey(csr)
	if err != nil || !pub.Equal(k.Public()) || name != "node-7" {
		t.Fatalf("ReadSubjectKey(csr) = %x, %q, %v", pub, name, err)
	}
	pubPEM, _ := EncodePublicKeyPEM(k.Public().(ed25519.PublicKey))
	pub, name, err = ReadSubjectKey(pubPEM)
	if err != nil || !pub.Equal(k.Public()) || name != "" {
		t.Fatalf("ReadSubjectKey(pub) = %x, %q, %v", pub, name, err)
	}

	// Tampering with the signed content breaks the proof of possession.
	block, _ := pem.Decode(csr)
	der := bytes.Clone(block.Bytes)
	i := bytes.Index(der, []byte("node-7"))
	der[i+5] = '8'
	tampered := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	if _, _, err := ParseRequest(tampered); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered CSR: got %v, want ErrBadSignature", err)
	}
	if _, _, err := ReadSubjectKey(tampered); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered CSR via ReadSubjectKey: got %v, want ErrBadSignature", err)
	}
	sig := bytes.Clone(block.Bytes)
	sig[len(sig)-1] ^= 0x80
	if _, _, err := ParseRequest(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: sig})); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("CSR with flipped signature: got %v, want ErrBadSignature", err)
	}

	// An ECDSA CSR is refused.
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, ec)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseRequest(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: ecDER})); !errors.Is(err, ErrMalformed) {
		t.Fatalf("ECDSA CSR: got %v, want ErrMalformed", err)
	}
	privPEM, _ := EncodePrivateKeyPEM(k)
	for name, b := range map[string][]byte{"private key": privPEM, "certificate": EncodeCertPEM(newFixture(t).node), "garbage": []byte("x")} {
		if _, _, err := ReadSubjectKey(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("ReadSubjectKey(%s): got %v, want ErrMalformed", name, err)
		}
		if _, _, err := ParseRequest(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseRequest(%s): got %v, want ErrMalformed", name, err)
		}
	}
	if _, err := CreateRequest(k, ""); err == nil {
		t.Error("CSR with empty name created")
	}
}

func TestNewAuthority(t *testing.T) {
	a, err := NewAuthority("Root", t0, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := a.Cert
	if !c.IsCA || !c.BasicConstraintsValid || !c.MaxPathLenZero || c.MaxPathLen != 0 {
		t.Errorf("CA constraints: IsCA=%v BCV=%v MaxPathLen=%d zero=%v", c.IsCA, c.BasicConstraintsValid, c.MaxPathLen, c.MaxPathLenZero)
	}
	if c.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign {
		t.Errorf("CA key usage %v", c.KeyUsage)
	}
	if c.Subject.CommonName != "Root" || len(c.Subject.OrganizationalUnit) != 1 || c.Subject.OrganizationalUnit[0] != "ca" {
		t.Errorf("CA subject %v", c.Subject)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if !c.NotBefore.Equal(t0) || !c.NotAfter.Equal(t0.Add(time.Hour)) {
		t.Errorf("validity %v..%v", c.NotBefore, c.NotAfter)
	}
	if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 128 {
		t.Errorf("serial %v", c.SerialNumber)
	}
	for _, bad := range []struct {
		name string
		v    time.Duration
	}{{"", time.Hour}, {"x", 0}, {strings.Repeat("a", 65), time.Hour}, {"tab\there", time.Hour}} {
		if _, err := NewAuthority(bad.name, t0, bad.v, nil); err == nil {
			t.Errorf("NewAuthority(%q, %v) accepted", bad.name, bad.v)
		}
	}
}

func TestIssue(t *testing.T) {
	f := newFixture(t)
	c := f.node
	if c.IsCA || !c.BasicConstraintsValid {
		t.Error("leaf is a CA")
	}
	if c.KeyUsage != x509.KeyUsageDigitalSignature || len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageAny {
		t.Errorf("leaf usage %v %v", c.KeyUsage, c.ExtKeyUsage)
	}
	if c.Subject.CommonName != "node-1" || len(c.Subject.OrganizationalUnit) != 1 || c.Subject.OrganizationalUnit[0] != "node" {
		t.Errorf("leaf subject %v", c.Subject)
	}
	if err := c.CheckSignatureFrom(f.ca.Cert); err != nil {
		t.Error(err)
	}
	if c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 128 {
		t.Errorf("serial %v", c.SerialNumber)
	}
	pub := mustKey(t, 20).Public().(ed25519.PublicKey)
	a, b := mustIssue(t, f.ca, pub, RoleNode, "x"), mustIssue(t, f.ca, pub, RoleNode, "y")
	if a.SerialNumber.Cmp(b.SerialNumber) == 0 {
		t.Error("two certificates share a serial")
	}
	good := IssueRequest{PublicKey: pub, Role: RoleClient, Name: "ok", NotBefore: t0, NotAfter: t0.Add(time.Hour)}
	if _, err := f.ca.Issue(good); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*IssueRequest){
		"role ca":         func(r *IssueRequest) { r.Role = RoleCA },
		"role empty":      func(r *IssueRequest) { r.Role = "" },
		"role unknown":    func(r *IssueRequest) { r.Role = "admin" },
		"name empty":      func(r *IssueRequest) { r.Name = "" },
		"name 65 bytes":   func(r *IssueRequest) { r.Name = strings.Repeat("a", 65) },
		"name newline":    func(r *IssueRequest) { r.Name = "a\nb" },
		"name bad utf8":   func(r *IssueRequest) { r.Name = "a\xffb" },
		"NotAfter equal":  func(r *IssueRequest) { r.NotAfter = r.NotBefore },
		"NotAfter before": func(r *IssueRequest) { r.NotAfter = r.NotBefore.Add(-time.Second) },
		"short key":       func(r *IssueRequest) { r.PublicKey = r.PublicKey[:31] },
		"failing rand":    func(r *IssueRequest) { r.Rand = bytes.NewReader(nil) },
	} {
		req := good
		mod(&req)
		if _, err := f.ca.Issue(req); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := f.ca.Issue(IssueRequest{PublicKey: pub, Role: RoleNode, Name: strings.Repeat("é", 32), NotBefore: t0, NotAfter: t0.Add(time.Hour)}); err != nil {
		t.Errorf("64-byte UTF-8 name refused: %v", err)
	}
}

func TestLoadAuthority(t *testing.T) {
	f := newFixture(t)
	certPEM := EncodeCertPEM(f.ca.Cert)
	keyPEM, _ := EncodePrivateKeyPEM(f.ca.Key)
	a, err := LoadAuthority(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Cert.Equal(f.ca.Cert) || !a.Key.Equal(f.ca.Key) {
		t.Fatal("loaded authority differs")
	}
	// The loaded authority works.
	c := mustIssue(t, a, mustKey(t, 30).Public().(ed25519.PublicKey), RoleNode, "loaded")
	if _, err := NewVerifier(f.ca.Cert).VerifyCert(c.Raw, t0); err != nil {
		t.Fatal(err)
	}

	otherKey, _ := EncodePrivateKeyPEM(f.otherCA.Key)
	if _, err := LoadAuthority(certPEM, otherKey); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("mismatched key: got %v, want ErrKeyMismatch", err)
	}
	nodeKey, _ := EncodePrivateKeyPEM(f.nodeKey)
	if _, err := LoadAuthority(EncodeCertPEM(f.node), nodeKey); !errors.Is(err, ErrWrongRole) {
		t.Errorf("leaf as CA: got %v, want ErrWrongRole", err)
	}
	if _, err := LoadAuthority([]byte("x"), keyPEM); !errors.Is(err, ErrMalformed) {
		t.Errorf("bad cert: got %v, want ErrMalformed", err)
	}
	if _, err := LoadAuthority(certPEM, []byte("x")); !errors.Is(err, ErrMalformed) {
		t.Errorf("bad key: got %v, want ErrMalformed", err)
	}
}
