package credit_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/job"
)

// t0 is the tests' "now".
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func detRand(seed byte) io.Reader {
	var s [32]byte
	s[0] = seed
	return mrand.NewChaCha8(s)
}

// fixture is a CA, two projects, a client and another CA's project.
type fixture struct {
	ca      *certs.Authority
	v       *certs.Verifier
	keys    map[string]ed25519.PrivateKey
	certs   map[string]*x509.Certificate
	client  ed25519.PublicKey
	foreign *x509.Certificate // a project certificate of another CA
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ca, err := certs.NewAuthority("test-ca", t0.Add(-48*time.Hour), 365*24*time.Hour, detRand(1))
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewAuthority("test-ca", t0.Add(-48*time.Hour), 365*24*time.Hour, detRand(2))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ca: ca, v: certs.NewVerifier(ca.Cert), keys: map[string]ed25519.PrivateKey{}, certs: map[string]*x509.Certificate{}}
	issue := func(a *certs.Authority, seed byte, role certs.Role, name string) (ed25519.PrivateKey, *x509.Certificate) {
		k, err := certs.GenerateKey(detRand(seed))
		if err != nil {
			t.Fatal(err)
		}
		c, err := a.Issue(certs.IssueRequest{PublicKey: k.Public().(ed25519.PublicKey), Role: role, Name: name,
			NotBefore: t0.Add(-24 * time.Hour), NotAfter: t0.Add(24 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return k, c
	}
	for i, name := range []string{"lhc", "climate"} {
		f.keys[name], f.certs[name] = issue(ca, byte(10+i), certs.RoleProject, name)
	}
	f.keys["node"], f.certs["node"] = issue(ca, 20, certs.RoleNode, "lhc") // a node named like a project
	ck, _ := issue(ca, 30, certs.RoleClient, "vol")
	f.client = ck.Public().(ed25519.PublicKey)
	f.keys["foreign"], f.foreign = issue(other, 40, certs.RoleProject, "lhc")
	return f
}

// receipt is project's receipt seq to the client, crediting n results of
// one credit each on top of prev results.
func (f *fixture) receipt(project string, seq uint64, prev, n int) *credit.Receipt {
	r := &credit.Receipt{Version: credit.Version, Project: project, CertRef: job.CertRef(f.certs[project].Raw),
		Client: f.client, Seq: seq, Total: uint64(prev + n), Results: uint64(prev + n), Created: t0.Add(-time.Minute).UnixMilli()}
	for i := range n {
		r.Entries = append(r.Entries, credit.Entry{Unit: int64(prev + i + 1), Job: []byte{1, 0x71, byte(i)}, Amount: 1, At: r.Created})
	}
	return r
}

func (f *fixture) sign(t testing.TB, r *credit.Receipt, signer string) []byte {
	t.Helper()
	cert := f.certs[r.Project].Raw
	if signer == "foreign" {
		cert = f.foreign.Raw
	}
	s, err := credit.Sign(r, f.keys[signer], cert)
	if err != nil {
		t.Fatal(err)
	}
	return s.Encode()
}

// errAnyRejection stands for any of the package's rejections.
var errAnyRejection = errors.New("any rejection")

func TestVerify(t *testing.T) {
	f := newFixture(t)
	good := f.sign(t, f.receipt("lhc", 1, 0, 3), "lhc")
	alter := func(change func(r *credit.Receipt)) []byte {
		s, _, err := credit.Decode(good)
		if err != nil {
			t.Fatal(err)
		}
		r := f.receipt("lhc", 1, 0, 3)
		change(r)
		forged, err := credit.Sign(r, f.keys["climate"], f.certs["lhc"].Raw) // any key: the signature is replaced below
		if err != nil {
			t.Fatal(err)
		}
		forged.Sig = s.Sig // the project's signature, over the receipt before the change
		return forged.Encode()
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/3] ^= 1
	wrongCert := func() []byte {
		s, _, _ := credit.Decode(good)
		s.Cert = f.certs["climate"].Raw
		return s.Encode()
	}()
	cases := []struct {
		name string
		b    []byte
		now  time.Time
		want error
	}{
		{"good", good, t0, nil},
		{"total raised", alter(func(r *credit.Receipt) { r.Total = 1000 }), t0, credit.ErrBadSignature},
		{"entry amount raised", alter(func(r *credit.Receipt) { r.Entries[0].Amount = 50; r.Total = 52 }), t0, credit.ErrBadSignature},
		{"client changed", alter(func(r *credit.Receipt) { r.Client = f.keys["node"].Public().(ed25519.PublicKey) }), t0, credit.ErrBadSignature},
		{"signed by another project's key", f.sign(t, f.receipt("lhc", 1, 0, 3), "climate"), t0, credit.ErrBadSignature},
		{"another CA's project", f.sign(t, func() *credit.Receipt {
			r := f.receipt("lhc", 1, 0, 3)
			r.CertRef = job.CertRef(f.foreign.Raw)
			return r
		}(), "foreign"), t0, credit.ErrCertificate},
		{"certificate swapped", wrongCert, t0, credit.ErrCertificate},
		{"bit flipped", flipped, t0, errAnyRejection},
		{"dated ahead of the verifier", good, t0.Add(-time.Hour), credit.ErrFuture},
		{"verified after the certificate expired", good, t0.Add(48 * time.Hour), nil},
		{"empty", nil, t0, credit.ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := credit.Verify(c.b, f.v, c.now)
			if c.want == errAnyRejection && credit.IsRejection(err) {
				return
			}
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
		})
	}
}

func TestVerifyNodeCertificate(t *testing.T) {
	f := newFixture(t)
	r := f.receipt("lhc", 1, 0, 1)
	r.CertRef = job.CertRef(f.certs["node"].Raw)
	s, err := credit.Sign(r, f.keys["node"], f.certs["node"].Raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := credit.Verify(s.Encode(), f.v, t0); !errors.Is(err, credit.ErrCertificate) {
		t.Fatalf("a node's receipt: %v, want ErrCertificate", err)
	}
}

func TestVerifyRevoked(t *testing.T) {
	f := newFixture(t)
	good := f.sign(t, f.receipt("lhc", 1, 0, 1), "lhc")
	if _, err := credit.Verify(good, f.v, t0); err != nil {
		t.Fatal(err) // control
	}
	rl, err := f.ca.Revoke(nil, []*big.Int{f.certs["lhc"].SerialNumber}, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.v.SetRevocationList(rl)
	if _, err := credit.Verify(good, f.v, t0); !errors.Is(err, credit.ErrCertificate) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked project: %v, want ErrCertificate (revoked)", err)
	}
}

func TestValidate(t *testing.T) {
	f := newFixture(t)
	cases := map[string]func(r *credit.Receipt){
		"no entries":          func(r *credit.Receipt) { r.Entries = nil },
		"total below entries": func(r *credit.Receipt) { r.Total = 1 },
		"results below":       func(r *credit.Receipt) { r.Results = 1 },
		"seq 0":               func(r *credit.Receipt) { r.Seq = 0 },
		"short client":        func(r *credit.Receipt) { r.Client = r.Client[:5] },
		"zero amount":         func(r *credit.Receipt) { r.Entries[0].Amount = 0 },
		"no job":              func(r *credit.Receipt) { r.Entries[1].Job = nil },
		"too many entries": func(r *credit.Receipt) {
			for len(r.Entries) <= credit.MaxEntries {
				r.Entries = append(r.Entries, r.Entries[0])
			}
			r.Total, r.Results = 1e6, 1e6
		},
	}
	if _, err := credit.Sign(f.receipt("lhc", 1, 0, 3), f.keys["lhc"], f.certs["lhc"].Raw); err != nil {
		t.Fatal(err) // control
	}
	for name, change := range cases {
		r := f.receipt("lhc", 1, 0, 3)
		change(r)
		if _, err := credit.Sign(r, f.keys["lhc"], f.certs["lhc"].Raw); !errors.Is(err, credit.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}
