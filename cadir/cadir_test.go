package cadir

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// seeded is a replayable randomness source.
type seeded struct{ r *rand.ChaCha8 }

func (s seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

func detRand(seed byte) seeded { return seeded{rand.NewChaCha8([32]byte{seed})} }

func newCA(t *testing.T, dir string) *CA {
	t.Helper()
	c, err := Create(dir, "test CA", t0.Add(-time.Hour), 10*365*24*time.Hour, detRand(1))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestCreateLoad: Create writes ca.crt (0644) and ca.key (0600) in a new
// 0700 directory, and Load reads back the same CA; a second Create on
// the directory is refused with ErrExists and changes nothing.
func TestCreateLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	c := newCA(t, dir)
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{{dir, 0o700}, {c.CertPath(), 0o644}, {c.KeyPath(), 0o600}} {
		if got := mode(t, tc.path); got != tc.want {
			t.Errorf("%s: mode %v, want %v", tc.path, got, tc.want)
		}
	}
	l, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Authority.Cert.Equal(c.Authority.Cert) || !l.Authority.Key.Equal(c.Authority.Key) {
		t.Fatal("loaded CA differs from the one created")
	}
	before, _ := os.ReadFile(c.KeyPath())
	_, err = Create(dir, "another CA", t0, time.Hour, nil)
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), c.KeyPath()) {
		t.Fatalf("second Create: %v, want ErrExists naming %s", err, c.KeyPath())
	}
	if after, _ := os.ReadFile(c.KeyPath()); !bytes.Equal(before, after) {
		t.Fatal("refused Create changed ca.key")
	}
}

// TestExistingLayoutLoads: a CA directory written as `up ca init` and
// `up ca revoke` wrote them before this package (certs' PEM encodings
// under ca.crt, ca.key, crl.pem) still loads, with its revocation list.
func TestExistingLayoutLoads(t *testing.T) {
	dir := t.TempDir()
	a, err := certs.NewAuthority("U.P. volunteer CA", t0, 3650*24*time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := certs.EncodePrivateKeyPEM(a.Key)
	rl, err := a.Revoke(nil, []*big.Int{big.NewInt(42)}, t0, 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"ca.crt": certs.EncodeCertPEM(a.Cert), "ca.key": keyPEM, "crl.pem": rl.PEM()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.RevocationList()
	if err != nil || got == nil || !got.IsRevoked(big.NewInt(42)) {
		t.Fatalf("revocation list %v, %v", got, err)
	}
}

// TestBadInput: every refusal is one line naming what is at fault.
func TestBadInput(t *testing.T) {
	root := t.TempDir()
	c := newCA(t, filepath.Join(root, "ca"))
	other := newOtherCA(t, filepath.Join(root, "other"))
	garbage := filepath.Join(root, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM at all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mixed := filepath.Join(root, "mixed") // other's certificate beside c's key
	if err := os.MkdirAll(mixed, 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, other.CertPath(), filepath.Join(mixed, CertFile))
	copyFile(t, c.KeyPath(), filepath.Join(mixed, KeyFile))
	otherCert := filepath.Join(root, "other.crt")
	issueTo(t, other, otherCert)
	for _, tc := range []struct {
		name string
		do   func() error
		want string
	}{
		{"load an empty directory", func() error { _, err := Load(root); return err }, "CA certificate"},
		{"load a key of another CA", func() error { _, err := Load(mixed); return err }, "CA in " + mixed + ": "},
		{"create with a zero validity", func() error { _, err := Create(filepath.Join(root, "z"), "z", t0, 0, nil); return err }, "validity"},
		{"create with a bad name", func() error { _, err := Create(filepath.Join(root, "n"), "a\nb", t0, time.Hour, nil); return err }, "name"},
		{"read a garbage request", func() error { _, err := ReadRequest(garbage); return err }, "request " + garbage + ": "},
		{"read a missing request", func() error { _, err := ReadRequest(filepath.Join(root, "nope.csr")); return err }, "nope.csr"},
		{"serial of another CA's certificate", func() error { _, err := c.IssuedSerial(otherCert); return err }, "was not issued by this CA"},
		{"serial of a garbage certificate", func() error { _, err := c.IssuedSerial(garbage); return err }, "certificate " + garbage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil {
				t.Fatal("accepted")
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line containing %q", msg, tc.want)
			}
		})
	}
	for _, d := range []string{"z", "n"} {
		if _, err := os.Stat(filepath.Join(root, d)); err == nil {
			t.Errorf("refused Create left %s behind", d)
		}
	}
}

func newOtherCA(t *testing.T, dir string) *CA {
	t.Helper()
	c, err := Create(dir, "other CA", t0.Add(-time.Hour), 24*time.Hour, detRand(2))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// issueTo writes a fresh client certificate of c to path.
func issueTo(t *testing.T, c *CA, path string) *big.Int {
	t.Helper()
	key, err := certs.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := c.Issue(Request{PublicKey: key.Public().(ed25519.PublicKey), Name: "w"}, certs.RoleClient, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCert(path, cert); err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber
}

// TestIssueFromRequests: a .csr names its subject, a bare PEM public key
// does not; both are issued for the key they carry, verifiable against
// the CA in the role given.
func TestIssueFromRequests(t *testing.T) {
	root := t.TempDir()
	c := newCA(t, filepath.Join(root, "ca"))
	key, err := certs.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	csr, err := certs.CreateRequest(key, "n1")
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := certs.EncodePublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file     string
		data     []byte
		wantName string
	}{{"n1.csr", csr, "n1"}, {"n1.pub", pubPEM, ""}} {
		path := filepath.Join(root, tc.file)
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		req, err := ReadRequest(path)
		if err != nil {
			t.Fatal(err)
		}
		if req.Name != tc.wantName || !req.PublicKey.Equal(pub) {
			t.Fatalf("%s: request %q for another key", tc.file, req.Name)
		}
		req.Name = "n1"
		cert, err := c.Issue(req, certs.RoleNode, t0, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		id, err := certs.NewVerifier(c.Authority.Cert).VerifyCert(cert.Raw, t0.Add(time.Minute), certs.RoleNode)
		if err != nil || id.Name != "n1" {
			t.Fatalf("%s: issued certificate verifies as %+v, %v", tc.file, id, err)
		}
	}
}

// TestCertify: Certify makes a party's data directory that loads, signed
// by the CA, for a year from an hour before its clock; the same seed
// makes the same identity.
func TestCertify(t *testing.T) {
	root := t.TempDir()
	c := newCA(t, filepath.Join(root, "ca"))
	var ids []*keystore.Identity
	for i := range 2 {
		id, err := c.Certify(Party{Dir: filepath.Join(root, fmt.Sprint("p", i)), Role: certs.RoleProject, Name: "lhc", Now: t0, Rand: detRand(9)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	id := ids[0]
	if id.Name != "lhc" || !id.CA.Equal(c.Authority.Cert) || id.ResultKey == nil {
		t.Fatalf("identity %q, CA %q", id.Name, id.CA.Subject.CommonName)
	}
	if !id.Cert.NotBefore.Equal(t0.Add(-time.Hour)) || !id.Cert.NotAfter.Equal(t0.Add(365*24*time.Hour)) {
		t.Fatalf("valid %v to %v", id.Cert.NotBefore, id.Cert.NotAfter)
	}
	if ids[1].PeerID != id.PeerID {
		t.Fatal("the same seed made another identity")
	}
	if _, err := c.Certify(Party{Dir: id.Dir, Role: certs.RoleProject, Name: "lhc", Now: t0}); !errors.Is(err, keystore.ErrInitialised) {
		t.Fatalf("second Certify of a directory: %v", err)
	}
}

// TestRevoke: each list holds every serial revoked so far, numbered one
// up; serials revoked already are reported and, alone, write nothing.
func TestRevoke(t *testing.T) {
	c := newCA(t, filepath.Join(t.TempDir(), "ca"))
	a, b := big.NewInt(7), big.NewInt(8)
	for i, tc := range []struct {
		serials     []*big.Int
		wantNumber  int64 // 0: no new list
		wantAlready int
		wantRevoked []*big.Int
	}{
		{[]*big.Int{a}, 1, 0, []*big.Int{a}},
		{[]*big.Int{a}, 0, 1, []*big.Int{a}},
		{[]*big.Int{a, b}, 2, 1, []*big.Int{a, b}},
	} {
		rl, already, err := c.Revoke(tc.serials, t0.Add(time.Duration(i)*time.Minute), 7*24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(already) != tc.wantAlready || (rl == nil) != (tc.wantNumber == 0) {
			t.Fatalf("step %d: list %v, %d already revoked", i, rl, len(already))
		}
		if rl != nil && rl.Number.Int64() != tc.wantNumber {
			t.Fatalf("step %d: list number %s, want %d", i, rl.Number, tc.wantNumber)
		}
		onDisk, err := c.RevocationList()
		if err != nil {
			t.Fatal(err)
		}
		if len(onDisk.Serials()) != len(tc.wantRevoked) {
			t.Fatalf("step %d: crl.pem revokes %v", i, onDisk.Serials())
		}
		for _, s := range tc.wantRevoked {
			if !onDisk.IsRevoked(s) {
				t.Fatalf("step %d: crl.pem does not revoke %s", i, s)
			}
		}
	}
}
