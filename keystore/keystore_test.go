package keystore

import (
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// detRand is a deterministic random source.
func detRand(seed byte) io.Reader {
	var s [32]byte
	s[0] = seed
	return mrand.NewChaCha8(s)
}

func newCA(tb testing.TB, seed byte) *certs.Authority {
	tb.Helper()
	ca, err := certs.NewAuthority("keystore test CA", t0.Add(-48*time.Hour), 10*365*24*time.Hour, detRand(seed))
	if err != nil {
		tb.Fatal(err)
	}
	return ca
}

// initDir initialises a node directory under a fresh temp dir.
func initDir(tb testing.TB, ca *certs.Authority, seed byte) Paths {
	tb.Helper()
	p := Paths{Dir: filepath.Join(tb.TempDir(), "data"), Role: certs.RoleNode}
	csr, err := Init(p.Dir, p.Role, "node-1", certs.EncodeCertPEM(ca.Cert), t0, detRand(seed))
	if err != nil {
		tb.Fatal(err)
	}
	if csr != p.CSR() {
		tb.Fatalf("Init returned %s, want %s", csr, p.CSR())
	}
	return p
}

// issue has ca certify the key of p's CSR with the given role and window,
// and writes the certificate into p.
func issue(tb testing.TB, ca *certs.Authority, p Paths, role certs.Role, nb, na time.Time) {
	tb.Helper()
	csr, err := os.ReadFile(p.CSR())
	if err != nil {
		tb.Fatal(err)
	}
	pub, name, err := certs.ReadSubjectKey(csr)
	if err != nil {
		tb.Fatal(err)
	}
	writeCert(tb, ca, p, pub, role, name, nb, na)
}

func writeCert(tb testing.TB, ca *certs.Authority, p Paths, pub ed25519.PublicKey, role certs.Role, name string, nb, na time.Time) {
	tb.Helper()
	c, err := ca.Issue(certs.IssueRequest{PublicKey: pub, Role: role, Name: name, NotBefore: nb, NotAfter: na})
	if err != nil {
		tb.Fatal(err)
	}
	if err := WriteFileAtomic(p.Cert(), certs.EncodeCertPEM(c), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// certified returns an initialised and certified node directory.
func certified(tb testing.TB, seed byte) (*certs.Authority, Paths) {
	tb.Helper()
	ca := newCA(tb, 1)
	p := initDir(tb, ca, seed)
	issue(tb, ca, p, certs.RoleNode, t0.Add(-time.Hour), t0.Add(24*time.Hour))
	return ca, p
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

func TestInitCreatesFiles(t *testing.T) {
	ca := newCA(t, 1)
	p := initDir(t, ca, 2)
	if st, err := os.Stat(p.Dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v, mode %v; want 0700", err, st.Mode().Perm())
	}
	for path, perm := range map[string]fs.FileMode{
		p.CA(): 0o644, p.CSR(): 0o644, p.Position(): 0o644,
		p.Key(): 0o600, p.PeerKey(): 0o600,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if st.Mode().Perm() != perm {
			t.Errorf("%s has mode %v, want %v", path, st.Mode().Perm(), perm)
		}
	}
	if _, err := os.Stat(p.Cert()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Init wrote a certificate: %v", err)
	}
	noTempFiles(t, p.Dir)

	// The files hold what they claim: the CA, a CSR for the key, a
	// position record of sequence 1 for the peer key, signed by the key.
	caPEM, _ := os.ReadFile(p.CA())
	if c, err := certs.DecodeCertPEM(caPEM); err != nil || !c.Equal(ca.Cert) {
		t.Fatalf("ca.crt: %v", err)
	}
	keyPEM, _ := os.ReadFile(p.Key())
	key, err := certs.DecodePrivateKeyPEM(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	csr, _ := os.ReadFile(p.CSR())
	pub, name, err := certs.ParseRequest(csr)
	if err != nil || name != "node-1" || !pub.Equal(key.Public()) {
		t.Fatalf("CSR: name %q, key matches %v, %v", name, pub.Equal(key.Public()), err)
	}
	posBytes, _ := os.ReadFile(p.Position())
	sp, err := certs.UnmarshalSignedPosition(posBytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Verify(key.Public().(ed25519.PublicKey)); err != nil || sp.Position.Seq != 1 || !sp.Position.IssuedAt.Equal(t0) {
		t.Fatalf("position: seq %d issued %v, %v", sp.Position.Seq, sp.Position.IssuedAt, err)
	}

	// The same seed gives the same identity.
	q := initDir(t, ca, 2)
	keyPEM2, _ := os.ReadFile(q.Key())
	if string(keyPEM) != string(keyPEM2) {
		t.Fatal("Init with the same random stream gave another key")
	}
}

func TestInitRefusesSecond(t *testing.T) {
	ca := newCA(t, 1)
	p := initDir(t, ca, 2)
	before, _ := os.ReadFile(p.Key())
	_, err := Init(p.Dir, p.Role, "node-1", certs.EncodeCertPEM(ca.Cert), t0, detRand(3))
	if !errors.Is(err, ErrInitialised) {
		t.Fatalf("second Init = %v, want ErrInitialised", err)
	}
	after, _ := os.ReadFile(p.Key())
	if string(before) != string(after) {
		t.Fatal("second Init replaced the key")
	}
	// Another role in the same directory is a separate identity.
	if _, err := Init(p.Dir, certs.RoleClient, "client-1", certs.EncodeCertPEM(ca.Cert), t0, detRand(4)); err != nil {
		t.Fatalf("Init of a client beside a node: %v", err)
	}
}

func TestInitRefusesBadCA(t *testing.T) {
	ca := newCA(t, 1)
	leafKey, _ := certs.GenerateKey(detRand(9))
	leaf, err := ca.Issue(certs.IssueRequest{
		PublicKey: leafKey.Public().(ed25519.PublicKey), Role: certs.RoleNode, Name: "leaf",
		NotBefore: t0, NotAfter: t0.Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, caPEM := range map[string][]byte{
		"leaf":    certs.EncodeCertPEM(leaf),
		"garbage": []byte("not a certificate"),
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if _, err := Init(dir, certs.RoleNode, "n", caPEM, t0, detRand(2)); err == nil {
				t.Fatal("Init succeeded")
			}
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("failed Init left %s behind: %v", dir, err)
			}
		})
	}
	// A bad name fails before anything is written too.
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := Init(dir, certs.RoleNode, "", certs.EncodeCertPEM(ca.Cert), t0, detRand(2)); err == nil {
		t.Fatal("Init with an empty name succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("failed Init left %s behind: %v", dir, err)
	}
}

func TestInitRollsBackPartialWrites(t *testing.T) {
	ca := newCA(t, 1)
	p := Paths{Dir: t.TempDir(), Role: certs.RoleNode}
	// A directory where position.rec goes makes the fourth write fail.
	if err := os.Mkdir(p.Position(), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(p.Dir, p.Role, "n", certs.EncodeCertPEM(ca.Cert), t0, detRand(2)); err == nil {
		t.Fatal("Init succeeded")
	}
	for _, f := range []string{p.CA(), p.CSR(), p.PeerKey(), p.Key()} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("failed Init left %s: %v", f, err)
		}
	}
	// The directory existed before, so it stays.
	if _, err := os.Stat(p.Dir); err != nil {
		t.Fatalf("pre-existing directory removed: %v", err)
	}
	noTempFiles(t, p.Dir)
}

func TestLoad(t *testing.T) {
	_, p := certified(t, 2)
	id, err := Load(p.Dir, p.Role, t0)
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != "node-1" || id.Paths != p || id.Revoked != nil {
		t.Fatalf("loaded %+v", id)
	}
	want, err := peer.IDFromPrivateKey(id.PeerKey)
	if err != nil || id.PeerID != want {
		t.Fatalf("peer ID %s, key gives %s (%v)", id.PeerID, want, err)
	}
	if string(id.Position.Position.PeerID) != string(id.PeerID) || id.Position.Position.Seq != 1 {
		t.Fatalf("position %+v for %s", id.Position.Position, id.PeerID)
	}
	if !id.Key.Public().(ed25519.PublicKey).Equal(id.Cert.PublicKey) {
		t.Fatal("key does not match certificate")
	}
}

func TestLoadCrossChecks(t *testing.T) {
	otherKey, _ := certs.GenerateKey(detRand(50))
	otherPub := otherKey.Public().(ed25519.PublicKey)
	cases := []struct {
		name   string
		break_ func(t *testing.T, ca *certs.Authority, p Paths)
		now    time.Time
		is     error    // errors.Is target, nil when there is no sentinel
		says   []string // substrings of the message
	}{
		{"cert of another key", func(t *testing.T, ca *certs.Authority, p Paths) {
			writeCert(t, ca, p, otherPub, certs.RoleNode, "node-1", t0.Add(-time.Hour), t0.Add(time.Hour))
		}, t0, certs.ErrKeyMismatch, []string{"node.crt", "node.key"}},
		{"missing cert", func(t *testing.T, ca *certs.Authority, p Paths) {
			_ = os.Remove(p.Cert())
		}, t0, nil, []string{"node.crt", "node.csr"}},
		{"expired cert", func(*testing.T, *certs.Authority, Paths) {}, t0.Add(25 * time.Hour), certs.ErrExpired, []string{"node.crt"}},
		{"not yet valid cert", func(*testing.T, *certs.Authority, Paths) {}, t0.Add(-2 * time.Hour), certs.ErrNotYetValid, []string{"node.crt"}},
		{"wrong role", func(t *testing.T, ca *certs.Authority, p Paths) {
			issue(t, ca, p, certs.RoleClient, t0.Add(-time.Hour), t0.Add(time.Hour))
		}, t0, certs.ErrWrongRole, []string{"node.crt"}},
		{"cert of another CA", func(t *testing.T, _ *certs.Authority, p Paths) {
			issue(t, newCA(t, 7), p, certs.RoleNode, t0.Add(-time.Hour), t0.Add(time.Hour))
		}, t0, certs.ErrUnknownIssuer, []string{"node.crt"}},
		{"revoked cert", func(t *testing.T, ca *certs.Authority, p Paths) {
			id, err := Load(p.Dir, p.Role, t0)
			if err != nil {
				t.Fatal(err)
			}
			rl, err := ca.Revoke(nil, []*big.Int{id.Cert.SerialNumber}, t0, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if err := id.SaveCRL(rl); err != nil {
				t.Fatal(err)
			}
		}, t0, certs.ErrRevoked, []string{"node.crt"}},
		{"crl of another CA", func(t *testing.T, _ *certs.Authority, p Paths) {
			rl, err := newCA(t, 7).Revoke(nil, []*big.Int{big.NewInt(5)}, t0, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			_ = WriteFileAtomic(p.CRL(), rl.PEM(), 0o644)
		}, t0, certs.ErrUnknownIssuer, []string{"crl.pem"}},
		{"position for another peer", func(t *testing.T, _ *certs.Authority, p Paths) {
			id := mustKeyOf(t, p)
			other, _, _ := crypto.GenerateEd25519Key(detRand(60))
			_, sp, err := positionFor(id, other, 1, t0)
			if err != nil {
				t.Fatal(err)
			}
			_ = WriteFileAtomic(p.Position(), sp.Marshal(), 0o644)
		}, t0, nil, []string{"position.rec", "peer.key", "names another peer"}},
		{"position signed by another key", func(t *testing.T, _ *certs.Authority, p Paths) {
			id, _ := Load(p.Dir, p.Role, t0)
			sp := certs.SignPosition(otherKey, certs.Position{PeerID: []byte(id.PeerID), Seq: 1, IssuedAt: t0})
			_ = WriteFileAtomic(p.Position(), sp.Marshal(), 0o644)
		}, t0, certs.ErrBadSignature, []string{"position.rec", "node.key"}},
		{"tampered position signature", func(t *testing.T, _ *certs.Authority, p Paths) {
			flip(t, p.Position(), -1)
		}, t0, certs.ErrBadSignature, []string{"position.rec"}},
		{"tampered position seq", func(t *testing.T, _ *certs.Authority, p Paths) {
			flip(t, p.Position(), -74) // last byte of Seq
		}, t0, certs.ErrBadSignature, []string{"position.rec"}},
		{"truncated position", func(t *testing.T, _ *certs.Authority, p Paths) {
			b, _ := os.ReadFile(p.Position())
			_ = os.WriteFile(p.Position(), b[:len(b)-1], 0o644)
		}, t0, certs.ErrMalformed, []string{"position.rec"}},
		{"missing position", func(t *testing.T, _ *certs.Authority, p Paths) {
			_ = os.Remove(p.Position())
		}, t0, nil, []string{"position.rec"}},
		{"peer key not PEM", func(t *testing.T, _ *certs.Authority, p Paths) {
			_ = os.WriteFile(p.PeerKey(), []byte("junk"), 0o600)
		}, t0, certs.ErrMalformed, []string{"peer.key"}},
		{"missing key", func(t *testing.T, _ *certs.Authority, p Paths) {
			_ = os.Remove(p.Key())
		}, t0, nil, []string{"node.key", "init"}},
		{"missing ca", func(t *testing.T, _ *certs.Authority, p Paths) {
			_ = os.Remove(p.CA())
		}, t0, nil, []string{"ca.crt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ca, p := certified(t, 2)
			c.break_(t, ca, p)
			_, err := Load(p.Dir, p.Role, c.now)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("Load = %v, want %v", err, c.is)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func mustKeyOf(t *testing.T, p Paths) ed25519.PrivateKey {
	t.Helper()
	b, err := os.ReadFile(p.Key())
	if err != nil {
		t.Fatal(err)
	}
	k, err := certs.DecodePrivateKeyPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// flip inverts one byte of a file; negative offsets count from the end.
func flip(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// peerKeyPEM encodes a libp2p private key as Init does.
func peerKeyPEM(t testing.TB, k crypto.PrivKey) []byte {
	raw, err := crypto.MarshalPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: peerKeyPEMType, Bytes: raw})
}

// TestLoadRefusesInconsistentPeerKey: a peer key whose secret half does not
// belong to its public half has the right peer ID but cannot sign for it.
func TestLoadRefusesInconsistentPeerKey(t *testing.T) {
	_, p := certified(t, 2)
	id, err := Load(p.Dir, p.Role, t0)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := id.PeerKey.Raw() // seed || public key
	if err != nil {
		t.Fatal(err)
	}
	raw[0] ^= 1 // corrupt the seed, keep the public half
	bad, err := crypto.UnmarshalEd25519PrivateKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.PeerKey(), peerKeyPEM(t, bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(p.Dir, p.Role, t0)
	if !errors.Is(err, certs.ErrKeyMismatch) || !strings.Contains(err.Error(), "peer.key") {
		t.Fatalf("Load of a corrupted peer key = %v, want ErrKeyMismatch naming peer.key", err)
	}
}

func TestRotate(t *testing.T) {
	_, p := certified(t, 2)
	id, err := Load(p.Dir, p.Role, t0)
	if err != nil {
		t.Fatal(err)
	}
	oldID := id.PeerID
	next, _, err := crypto.GenerateEd25519Key(detRand(70))
	if err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Minute)
	if err := id.Rotate(next, later); err != nil {
		t.Fatal(err)
	}
	nextID, _ := peer.IDFromPrivateKey(next)
	if id.PeerID != nextID || id.Position.Position.Seq != 2 {
		t.Fatalf("after Rotate: peer %s seq %d", id.PeerID, id.Position.Position.Seq)
	}
	re, err := Load(p.Dir, p.Role, later)
	if err != nil {
		t.Fatal(err)
	}
	if re.PeerID != nextID || re.PeerID == oldID {
		t.Fatalf("Load after Rotate: peer %s, want %s", re.PeerID, nextID)
	}
	if re.Position.Position.Seq != 2 || !re.Position.Position.IssuedAt.Equal(later) {
		t.Fatalf("position after Rotate: %+v", re.Position.Position)
	}
	if !re.Position.Position.Supersedes(certs.Position{Seq: 1}) {
		t.Fatal("rotated position does not supersede the first")
	}
	if st, err := os.Stat(p.PeerKey()); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("peer.key after Rotate: %v %v", err, st.Mode().Perm())
	}
	noTempFiles(t, p.Dir)
}

func TestSaveCRLAndVerifier(t *testing.T) {
	ca, p := certified(t, 2)
	id, err := Load(p.Dir, p.Role, t0)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := ca.Revoke(nil, []*big.Int{big.NewInt(12345)}, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.SaveCRL(rl); err != nil {
		t.Fatal(err)
	}
	re, err := Load(p.Dir, p.Role, t0)
	if err != nil {
		t.Fatal(err)
	}
	if re.Revoked == nil || re.Revoked.Number.Cmp(rl.Number) != 0 {
		t.Fatalf("saved CRL not loaded: %+v", re.Revoked)
	}
	if !re.NewVerifier().IsRevoked(big.NewInt(12345)) {
		t.Fatal("verifier does not hold the saved CRL")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for i, data := range []string{"first", "second, longer", "3"} {
		perm := []fs.FileMode{0o600, 0o644, 0o640}[i]
		if err := WriteFileAtomic(path, []byte(data), perm); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		st, _ := os.Stat(path)
		if string(got) != data || st.Mode().Perm() != perm {
			t.Fatalf("write %d: %q mode %v, want %q %v", i, got, st.Mode().Perm(), data, perm)
		}
	}
	// Failures leave no temporary file either.
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, "sub"), []byte("x"), 0o644); err == nil {
		t.Fatal("replacing a directory succeeded")
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
	noTempFiles(t, dir)
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("directory holds %d entries, want 2 (f, sub)", len(ents))
	}
}

func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockDir(dir)
	if !errors.Is(err, ErrInUse) || err.Error() != "data directory "+dir+" is in use by another process" {
		t.Fatalf("second lock: %v, want %q", err, "data directory "+dir+" is in use by another process")
	}
	l.Unlock()
	l.Unlock()
	l2, err := LockDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.Unlock()
	if _, err := LockDir(filepath.Join(dir, "missing")); err == nil || errors.Is(err, ErrInUse) {
		t.Fatalf("lock of a missing directory: %v", err)
	}
}
