package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"
)

// rawCert signs tmpl with priv as parent and returns the DER, for building
// certificates Issue refuses to make.
func rawCert(tb testing.TB, tmpl, parent *x509.Certificate, pub any, priv crypto.Signer) []byte {
	tb.Helper()
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = big.NewInt(42)
	}
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore, tmpl.NotAfter = t0.Add(-time.Hour), t0.Add(time.Hour)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
	if err != nil {
		tb.Fatal(err)
	}
	return der
}

func leafTemplate(name string, ous ...string) *x509.Certificate {
	return &x509.Certificate{
		Subject:               pkix.Name{CommonName: name, OrganizationalUnit: ous},
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
}

func TestVerifyCert(t *testing.T) {
	f := newFixture(t)
	caKey := f.ca.Key
	attacker := mustKey(t, 99)
	attackerPub := attacker.Public().(ed25519.PublicKey)
	leafPub := mustKey(t, 98).Public().(ed25519.PublicKey)

	flipSig := bytes.Clone(f.node.Raw)
	flipSig[len(flipSig)-1] ^= 0x01 // the signature is the last field of the DER

	tamperTBS := bytes.Clone(f.node.Raw)
	i := bytes.Index(tamperTBS, []byte("node-1"))
	if i < 0 {
		t.Fatal("CN not found in DER")
	}
	tamperTBS[i+5] = '2' // "node-2": signature no longer covers it

	selfSigned := rawCert(t, leafTemplate("node-self", "node"), leafTemplate("node-self", "node"), attackerPub, attacker)
	// Issuer name copied from our CA, signed by the attacker's key.
	fakeParent := &x509.Certificate{Subject: f.ca.Cert.Subject, PublicKey: attackerPub,
		SubjectKeyId: []byte{1, 2, 3}, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	forgedIssuer := rawCert(t, leafTemplate("node-forged", "node"), fakeParent, leafPub, attacker)

	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecdsaLeaf := rawCert(t, leafTemplate("node-ec", "node"), f.ca.Cert, &ecKey.PublicKey, caKey)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaSelf := rawCert(t, leafTemplate("node-rsa", "node"), leafTemplate("node-rsa", "node"), &rsaKey.PublicKey, rsaKey)

	twoOUs := rawCert(t, leafTemplate("node-2ou", "node", "client"), f.ca.Cert, leafPub, caKey)
	noOU := rawCert(t, leafTemplate("node-noou"), f.ca.Cert, leafPub, caKey)
	badOU := rawCert(t, leafTemplate("node-admin", "admin"), f.ca.Cert, leafPub, caKey)
	caOU := rawCert(t, leafTemplate("node-caou", "ca"), f.ca.Cert, leafPub, caKey)
	intermediateTmpl := leafTemplate("intermediate", "node")
	intermediateTmpl.IsCA = true
	intermediateTmpl.KeyUsage |= x509.KeyUsageCertSign
	intermediate := rawCert(t, intermediateTmpl, f.ca.Cert, leafPub, caKey)

	nb, na := f.node.NotBefore, f.node.NotAfter

	tests := []struct {
		name  string
		der   []byte
		now   time.Time
		roles []Role
		want  error // nil: valid
		role  Role  // expected role when valid
	}{
		{"node any role", f.node.Raw, t0, nil, nil, RoleNode},
		{"node as node", f.node.Raw, t0, []Role{RoleNode}, nil, RoleNode},
		{"project as project or client", f.project.Raw, t0, []Role{RoleProject, RoleClient}, nil, RoleProject},
		{"client any role", f.client.Raw, t0, nil, nil, RoleClient},
		{"at NotBefore exactly", f.node.Raw, nb, nil, nil, RoleNode},
		{"at NotAfter exactly", f.node.Raw, na, nil, nil, RoleNode},

		{"other CA", f.foreign.Raw, t0, nil, ErrUnknownIssuer, ""},
		{"other CA same name", mustIssue(t, f.sameName, leafPub, RoleNode, "node-samename").Raw, t0, nil, ErrUnknownIssuer, ""},
		// Forged signatures are reported as ErrUnknownIssuer (see errors.go).
		{"signature bit flipped", flipSig, t0, nil, ErrUnknownIssuer, ""},
		{"TBS tampered", tamperTBS, t0, nil, ErrUnknownIssuer, ""},
		{"self-signed claiming node", selfSigned, t0, []Role{RoleNode}, ErrUnknownIssuer, ""},
		{"forged issuer name", forgedIssuer, t0, nil, ErrUnknownIssuer, ""},

		{"node as client", f.node.Raw, t0, []Role{RoleClient}, ErrWrongRole, ""},
		{"client as node or project", f.client.Raw, t0, []Role{RoleNode, RoleProject}, ErrWrongRole, ""},
		{"CA cert as node", f.ca.Cert.Raw, t0, []Role{RoleNode}, ErrWrongRole, ""},
		{"CA cert any role", f.ca.Cert.Raw, t0, nil, ErrWrongRole, ""},
		{"CA-signed intermediate", intermediate, t0, nil, ErrWrongRole, ""},
		{"two OUs", twoOUs, t0, nil, ErrWrongRole, ""},
		{"no OU", noOU, t0, nil, ErrWrongRole, ""},
		{"unknown OU", badOU, t0, nil, ErrWrongRole, ""},
		{"leaf with OU ca", caOU, t0, []Role{RoleCA}, ErrWrongRole, ""},

		{"expired", f.node.Raw, na.Add(time.Second), nil, ErrExpired, ""},
		{"long expired", f.node.Raw, na.Add(365 * 24 * time.Hour), nil, ErrExpired, ""},
		{"not yet valid", f.node.Raw, nb.Add(-time.Second), nil, ErrNotYetValid, ""},

		{"garbage", []byte("this is not a certificate"), t0, nil, ErrMalformed, ""},
		{"empty", nil, t0, nil, ErrMalformed, ""},
		{"truncated", f.node.Raw[:len(f.node.Raw)/2], t0, nil, ErrMalformed, ""},
		{"too large", make([]byte, MaxCertSize+1), t0, nil, ErrMalformed, ""},
		{"PEM instead of DER", EncodeCertPEM(f.node), t0, nil, ErrMalformed, ""},
		{"ECDSA leaf signed by CA", ecdsaLeaf, t0, nil, ErrMalformed, ""},
		{"RSA self-signed", rsaSelf, t0, nil, ErrMalformed, ""},
	}
	v := NewVerifier(f.ca.Cert)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Twice: the second call may hit the cache and must agree.
			for pass := range 2 {
				id, err := v.VerifyCert(tc.der, tc.now, tc.roles...)
				if tc.want == nil {
					if err != nil {
						t.Fatalf("pass %d: unexpected error: %v", pass, err)
					}
					c, _ := x509.ParseCertificate(tc.der)
					if id.Role != tc.role || id.Name != c.Subject.CommonName || id.Serial.Cmp(c.SerialNumber) != 0 ||
						!bytes.Equal(id.PublicKey, c.PublicKey.(ed25519.PublicKey)) ||
						!id.NotBefore.Equal(c.NotBefore) || !id.NotAfter.Equal(c.NotAfter) || !bytes.Equal(id.Cert.Raw, tc.der) {
						t.Fatalf("pass %d: identity %+v does not match certificate", pass, id)
					}
					continue
				}
				if !errors.Is(err, tc.want) {
					t.Fatalf("pass %d: got %v, want %v", pass, err, tc.want)
				}
				if id != nil {
					t.Fatalf("pass %d: identity returned with error", pass)
				}
			}
		})
	}
}

func TestVerifyCertRevocation(t *testing.T) {
	f := newFixture(t)
	v := NewVerifier(f.ca.Cert)
	if _, err := v.VerifyCert(f.node.Raw, t0); err != nil {
		t.Fatalf("before revocation: %v", err)
	}
	if v.IsRevoked(f.node.SerialNumber) || v.RevocationList() != nil {
		t.Fatal("revoked before any list")
	}
	rl, err := f.ca.Revoke(nil, []*big.Int{f.node.SerialNumber}, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Not revoked until the verifier adopts the list.
	if _, err := v.VerifyCert(f.node.Raw, t0); err != nil {
		t.Fatalf("list not yet adopted: %v", err)
	}
	if !v.SetRevocationList(rl) {
		t.Fatal("first list not adopted")
	}
	// The node certificate is cached from above; revocation must still apply.
	if _, err := v.VerifyCert(f.node.Raw, t0); !errors.Is(err, ErrRevoked) {
		t.Fatalf("after revocation: got %v, want ErrRevoked", err)
	}
	if !v.IsRevoked(f.node.SerialNumber) {
		t.Fatal("IsRevoked false after revocation")
	}
	for _, c := range []*x509.Certificate{f.project, f.client} {
		if _, err := v.VerifyCert(c.Raw, t0); err != nil {
			t.Fatalf("%s revoked by mistake: %v", c.Subject.CommonName, err)
		}
	}
	// A fresh verifier (cold cache) agrees.
	v2 := NewVerifier(f.ca.Cert)
	v2.SetRevocationList(rl)
	if _, err := v2.VerifyCert(f.node.Raw, t0); !errors.Is(err, ErrRevoked) {
		t.Fatalf("cold verifier: got %v, want ErrRevoked", err)
	}
}

func TestVerifierCacheRechecksTime(t *testing.T) {
	f := newFixture(t)
	v := NewVerifier(f.ca.Cert)
	if _, err := v.VerifyCert(f.node.Raw, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyCert(f.node.Raw, f.node.NotAfter.Add(time.Minute)); !errors.Is(err, ErrExpired) {
		t.Fatalf("cached cert later: got %v, want ErrExpired", err)
	}
	if _, err := v.VerifyCert(f.node.Raw, t0, RoleClient); !errors.Is(err, ErrWrongRole) {
		t.Fatalf("cached cert, other role: got %v, want ErrWrongRole", err)
	}
}

func TestVerifierCacheBounded(t *testing.T) {
	f := newFixture(t)
	v := NewVerifier(f.ca.Cert)
	if _, err := v.VerifyCert(f.node.Raw, t0); err != nil {
		t.Fatal(err)
	}
	first := sha256.Sum256(f.node.Raw)
	if v.lookup(first) == nil {
		t.Fatal("successful check not cached")
	}
	if _, err := v.VerifyCert(f.foreign.Raw, t0); err == nil {
		t.Fatal("foreign cert accepted")
	}
	if v.lookup(sha256.Sum256(f.foreign.Raw)) != nil {
		t.Fatal("failed check cached")
	}
	dummy := &checkedCert{}
	for i := range verifyCacheSize {
		var k [sha256.Size]byte
		k[0], k[1], k[2] = 0xff, byte(i), byte(i>>8)
		v.store(k, dummy)
	}
	if n := len(v.cache); n != verifyCacheSize {
		t.Fatalf("cache has %d entries, want %d", n, verifyCacheSize)
	}
	if v.lookup(first) != nil {
		t.Fatal("oldest entry not evicted")
	}
	// Still verifies (re-checks the signature) after eviction.
	if _, err := v.VerifyCert(f.node.Raw, t0); err != nil {
		t.Fatal(err)
	}
	if n := len(v.cache); n != verifyCacheSize {
		t.Fatalf("cache has %d entries after re-insert, want %d", n, verifyCacheSize)
	}
}

func TestVerifierNoUsableCA(t *testing.T) {
	f := newFixture(t)
	for name, ca := range map[string]*x509.Certificate{"nil": nil, "leaf as CA": f.node} {
		v := NewVerifier(ca)
		if _, err := v.VerifyCert(f.node.Raw, t0); !errors.Is(err, ErrUnknownIssuer) {
			t.Errorf("%s: got %v, want ErrUnknownIssuer", name, err)
		}
	}
}

func TestVerifierConcurrent(t *testing.T) {
	f := newFixture(t)
	v := NewVerifier(f.ca.Cert)
	var lists []*RevocationList
	var prev *RevocationList
	for i := range 5 {
		rl, err := f.ca.Revoke(prev, []*big.Int{big.NewInt(int64(1000 + i))}, t0, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		lists, prev = append(lists, rl), rl
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if i%50 == 0 {
					v.SetRevocationList(lists[(g+i)%len(lists)])
				}
				c := []*x509.Certificate{f.node, f.project, f.client}[i%3]
				if _, err := v.VerifyCert(c.Raw, t0); err != nil {
					t.Error(err)
					return
				}
				_ = v.IsRevoked(big.NewInt(int64(i)))
			}
		})
	}
	wg.Wait()
	v.SetRevocationList(lists[len(lists)-1])
	if got := v.RevocationList(); got.Number.Cmp(big.NewInt(5)) != 0 {
		t.Fatalf("final list number %v, want 5", got.Number)
	}
}
