// Package keystore owns the on-disk identity of a U.P. party (node, client
// or project): the layout of its data directory, creating it (keys,
// certificate request, libp2p identity, position record), loading and
// cross-checking it, and atomic file writes so nothing is ever half-written.
package keystore

import (
	"crypto/ed25519"
	cryptorand "crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"

	"github.com/up-pool/up/certs"
)

// Paths names the files of a party's data directory.
type Paths struct {
	Dir  string
	Role certs.Role
}

// CA is the trusted CA certificate.
func (p Paths) CA() string { return filepath.Join(p.Dir, "ca.crt") }

// Key is the account (signing) key.
func (p Paths) Key() string { return filepath.Join(p.Dir, string(p.Role)+".key") }

// CSR is the certificate request to hand to the CA.
func (p Paths) CSR() string { return filepath.Join(p.Dir, string(p.Role)+".csr") }

// Cert is the certificate the CA issued.
func (p Paths) Cert() string { return filepath.Join(p.Dir, string(p.Role)+".crt") }

// PeerKey is the libp2p identity of the current position.
func (p Paths) PeerKey() string { return filepath.Join(p.Dir, "peer.key") }

// Position is the signed position record of the current peer identity.
func (p Paths) Position() string { return filepath.Join(p.Dir, "position.rec") }

// CRL is the newest revocation list seen.
func (p Paths) CRL() string { return filepath.Join(p.Dir, "crl.pem") }

// ResultKey is a project's X25519 key that clients seal results to.
func (p Paths) ResultKey() string { return filepath.Join(p.Dir, "result.key") }

// Store is the embedded database directory.
func (p Paths) Store() string { return filepath.Join(p.Dir, "store") }

// GoneStore is the directory of a node's second database, the gone
// records of the jobs it deleted (pool.Deps.GoneStore).
func (p Paths) GoneStore() string { return filepath.Join(p.Dir, "gone") }

// ErrInitialised reports a data directory that already holds an identity.
var ErrInitialised = errors.New("data directory already initialised")

const (
	peerKeyPEMType   = "LIBP2P PRIVATE KEY"
	resultKeyPEMType = "X25519 PRIVATE KEY"
)

// Init creates a party's data directory: it checks caPEM is a CA
// certificate, generates the account key, the certificate request (CN =
// name), a libp2p identity and its position record (sequence 1), and
// writes them. It refuses a directory that already holds a key. On error
// nothing it wrote is left behind. It returns the request's path. Keys
// come from rand (crypto/rand when nil), so tests can replay identities.
func Init(dir string, role certs.Role, name string, caPEM []byte, now time.Time, rand io.Reader) (string, error) {
	p := Paths{Dir: dir, Role: role}
	if role != certs.RoleNode && role != certs.RoleProject && role != certs.RoleClient {
		return "", fmt.Errorf("init %s: role %q is not node, project or client", dir, role)
	}
	ca, err := certs.DecodeCertPEM(caPEM)
	if err != nil {
		return "", fmt.Errorf("CA certificate: %w", err)
	}
	if !ca.IsCA {
		return "", fmt.Errorf("CA certificate %q is not a CA", ca.Subject.CommonName)
	}
	if _, err := os.Stat(p.Key()); err == nil {
		return "", fmt.Errorf("%s: %w (found %s)", dir, ErrInitialised, p.Key())
	}
	if rand == nil {
		rand = cryptorand.Reader
	}
	key, err := certs.GenerateKey(rand)
	if err != nil {
		return "", err
	}
	keyPEM, err := certs.EncodePrivateKeyPEM(key)
	if err != nil {
		return "", err
	}
	csr, err := certs.CreateRequest(key, name)
	if err != nil {
		return "", fmt.Errorf("certificate request for %q: %w", name, err)
	}
	peerKey, _, err := crypto.GenerateEd25519Key(rand)
	if err != nil {
		return "", fmt.Errorf("generate peer identity: %w", err)
	}
	peerPEM, pos, err := positionFor(key, peerKey, 1, now)
	if err != nil {
		return "", err
	}
	created := false
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		created = true
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create data directory: %w", err)
	}
	type file struct {
		path string
		data []byte
		perm os.FileMode
	}
	files := []file{
		{p.CA(), certs.EncodeCertPEM(ca), 0o644},
		{p.CSR(), csr, 0o644},
		{p.PeerKey(), peerPEM, 0o600},
		{p.Position(), pos.Marshal(), 0o644},
	}
	if role == certs.RoleProject {
		_, priv, err := box.GenerateKey(rand)
		if err != nil {
			return "", fmt.Errorf("generate result key: %w", err)
		}
		files = append(files, file{p.ResultKey(), pem.EncodeToMemory(&pem.Block{Type: resultKeyPEMType, Bytes: priv[:]}), 0o600})
	}
	files = append(files, file{p.Key(), keyPEM, 0o600}) // last: its presence marks a complete init
	var written []string
	for _, f := range files {
		if err := WriteFileAtomic(f.path, f.data, f.perm); err != nil {
			for _, w := range written {
				_ = os.Remove(w)
			}
			if created {
				_ = os.RemoveAll(dir)
			}
			return "", err
		}
		written = append(written, f.path)
	}
	return p.CSR(), nil
}

// positionFor encodes peerKey and signs its position record.
func positionFor(account ed25519.PrivateKey, peerKey crypto.PrivKey, seq uint64, now time.Time) ([]byte, certs.SignedPosition, error) {
	raw, err := crypto.MarshalPrivateKey(peerKey)
	if err != nil {
		return nil, certs.SignedPosition{}, fmt.Errorf("encode peer identity: %w", err)
	}
	id, err := peer.IDFromPrivateKey(peerKey)
	if err != nil {
		return nil, certs.SignedPosition{}, fmt.Errorf("peer id: %w", err)
	}
	sp := certs.SignPosition(account, certs.Position{PeerID: []byte(id), Seq: seq, IssuedAt: now})
	return pem.EncodeToMemory(&pem.Block{Type: peerKeyPEMType, Bytes: raw}), sp, nil
}

// WriteFileAtomic writes data to path through a synced temporary file in
// the same directory and a rename, so readers see the old or the new file,
// never a part.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Identity is a party's loaded and cross-checked data directory.
type Identity struct {
	Paths
	Name     string
	CA       *x509.Certificate
	Key      ed25519.PrivateKey
	Cert     *x509.Certificate
	PeerKey  crypto.PrivKey
	PeerID   peer.ID
	Position certs.SignedPosition
	Revoked  *certs.RevocationList // newest saved revocation list; nil when none
	// ResultKey is a project's X25519 private key for opening sealed
	// results; nil for other roles.
	ResultKey *[32]byte
}

// Load reads a party's data directory and checks that it fits together:
// the certificate matches the key and the role and is signed by the CA
// and valid at now, and the position record names the peer identity and
// is signed by the key. Every error names the file at fault.
func Load(dir string, role certs.Role, now time.Time) (*Identity, error) {
	p := Paths{Dir: dir, Role: role}
	id := &Identity{Paths: p}
	caPEM, err := readFile(p.CA(), "CA certificate")
	if err != nil {
		return nil, err
	}
	if id.CA, err = certs.DecodeCertPEM(caPEM); err != nil {
		return nil, fmt.Errorf("%s: %w", p.CA(), err)
	}
	keyPEM, err := readFile(p.Key(), "key (run init first)")
	if err != nil {
		return nil, err
	}
	if id.Key, err = certs.DecodePrivateKeyPEM(keyPEM); err != nil {
		return nil, fmt.Errorf("%s: %w", p.Key(), err)
	}
	certPEM, err := readFile(p.Cert(), "certificate (have the CA issue one for "+p.CSR()+")")
	if err != nil {
		return nil, err
	}
	if id.Cert, err = certs.DecodeCertPEM(certPEM); err != nil {
		return nil, fmt.Errorf("%s: %w", p.Cert(), err)
	}
	if !id.Key.Public().(ed25519.PublicKey).Equal(id.Cert.PublicKey) {
		return nil, fmt.Errorf("%s does not match %s: %w", p.Cert(), p.Key(), certs.ErrKeyMismatch)
	}
	if crlPEM, err := os.ReadFile(p.CRL()); err == nil {
		if id.Revoked, err = certs.ParseRevocationList(crlPEM, id.CA); err != nil {
			return nil, fmt.Errorf("%s: %w", p.CRL(), err)
		}
	}
	ident, err := id.NewVerifier().VerifyCert(id.Cert.Raw, now, role)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Cert(), err)
	}
	id.Name = ident.Name
	if err := id.loadPeer(); err != nil {
		return nil, err
	}
	if role == certs.RoleProject {
		if err := id.loadResultKey(); err != nil {
			return nil, err
		}
	}
	return id, nil
}

// loadPeer reads the peer key and the signed position record, and checks
// that the record is signed by the account key and names the peer.
func (id *Identity) loadPeer() error {
	p := id.Paths
	peerPEM, err := readFile(p.PeerKey(), "peer identity")
	if err != nil {
		return err
	}
	blk, _ := pem.Decode(peerPEM)
	if blk == nil || blk.Type != peerKeyPEMType {
		return fmt.Errorf("%s: no %s PEM block: %w", p.PeerKey(), peerKeyPEMType, certs.ErrMalformed)
	}
	if id.PeerKey, err = crypto.UnmarshalPrivateKey(blk.Bytes); err != nil {
		return fmt.Errorf("%s: %w", p.PeerKey(), err)
	}
	if id.PeerID, err = peer.IDFromPrivateKey(id.PeerKey); err != nil {
		return fmt.Errorf("%s: %w", p.PeerKey(), err)
	}
	// The peer ID comes from the public half only: a damaged secret half
	// would load with the right ID and fail every handshake later.
	if err := checkKeyPair(id.PeerKey); err != nil {
		return fmt.Errorf("%s: %w", p.PeerKey(), err)
	}
	posBytes, err := readFile(p.Position(), "position record")
	if err != nil {
		return err
	}
	if id.Position, err = certs.UnmarshalSignedPosition(posBytes); err != nil {
		return fmt.Errorf("%s: %w", p.Position(), err)
	}
	if err := id.Position.Verify(id.Key.Public().(ed25519.PublicKey)); err != nil {
		return fmt.Errorf("%s not signed by %s: %w", p.Position(), p.Key(), err)
	}
	if string(id.Position.Position.PeerID) != string(id.PeerID) {
		return fmt.Errorf("%s names another peer than %s", p.Position(), p.PeerKey())
	}
	return nil
}

// loadResultKey reads a project's result key.
func (id *Identity) loadResultKey() error {
	p := id.Paths
	b, err := readFile(p.ResultKey(), "result key")
	if err != nil {
		return err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != resultKeyPEMType || len(blk.Bytes) != 32 {
		return fmt.Errorf("%s: no %s PEM block of 32 bytes: %w", p.ResultKey(), resultKeyPEMType, certs.ErrMalformed)
	}
	id.ResultKey = new([32]byte)
	copy(id.ResultKey[:], blk.Bytes)
	return nil
}

// checkKeyPair reports a private key whose signatures do not verify under
// its own public key.
func checkKeyPair(k crypto.PrivKey) error {
	msg := []byte("up/keystore/peer-key-check")
	sig, err := k.Sign(msg)
	if err != nil {
		return fmt.Errorf("sign with peer identity: %w", err)
	}
	if ok, err := k.GetPublic().Verify(msg, sig); err != nil || !ok {
		return fmt.Errorf("private key does not match its public key: %w", certs.ErrKeyMismatch)
	}
	return nil
}

func readFile(path, what string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no %s", path, what)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// NewVerifier returns a verifier for the identity's CA that already holds
// the saved revocation list.
func (id *Identity) NewVerifier() *certs.Verifier {
	v := certs.NewVerifier(id.CA)
	if id.Revoked != nil {
		v.SetRevocationList(id.Revoked)
	}
	return v
}

// SaveCRL persists a newer revocation list.
func (id *Identity) SaveCRL(rl *certs.RevocationList) error {
	if err := WriteFileAtomic(id.Paths.CRL(), rl.PEM(), 0o644); err != nil {
		return err
	}
	id.Revoked = rl
	return nil
}

// Rotate replaces the peer identity with peerKey and a position record of
// the next sequence number, written atomically (used by moves).
func (id *Identity) Rotate(peerKey crypto.PrivKey, now time.Time) error {
	peerPEM, pos, err := positionFor(id.Key, peerKey, id.Position.Position.Seq+1, now)
	if err != nil {
		return err
	}
	// Position first: a crash between the writes leaves a newer record
	// for an unknown key, which Load reports; the reverse would silently
	// reuse a superseded sequence number.
	if err := WriteFileAtomic(id.Paths.Position(), pos.Marshal(), 0o644); err != nil {
		return err
	}
	if err := WriteFileAtomic(id.Paths.PeerKey(), peerPEM, 0o600); err != nil {
		return err
	}
	pid, _ := peer.IDFromPrivateKey(peerKey)
	id.PeerKey, id.PeerID, id.Position = peerKey, pid, pos
	return nil
}

// ResultPublicKey is the X25519 public key of a project's result key, to
// put in its job specs; nil for other roles.
func (id *Identity) ResultPublicKey() []byte {
	if id.ResultKey == nil {
		return nil
	}
	var pub [32]byte
	curve25519.ScalarBaseMult(&pub, id.ResultKey)
	return pub[:]
}
