// Package cadir owns a certificate authority's directory: its layout
// (ca.crt, ca.key, crl.pem), creating and loading it, issuing
// certificates from requests, certifying a party's data directory, and
// revoking. `up ca`, `up testnet init` and the in-process test networks
// (package testnet) all keep their CA with it.
//
// Every file is written with keystore.WriteFileAtomic, so a reader sees a
// whole old or a whole new file, never a part; and ca.key is written
// last, so a crash while creating a CA leaves either a complete CA or a
// directory without ca.key, on which Create can simply be run again.
//
// The package is a library, not a pure core: it reads and writes files.
// It sits beside keystore (a party's data directory) rather than in it,
// because a CA's key is kept offline by its operator and is no part of
// any node's, client's or project's identity; and it is not in certs,
// which touches no file.
package cadir

import (
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
)

// The files of a CA directory.
const (
	CertFile = "ca.crt"  // the CA certificate: give it to every party
	KeyFile  = "ca.key"  // the CA key: keep it offline
	CRLFile  = "crl.pem" // the newest signed revocation list, once there is one
)

// ErrExists reports a directory that already holds a CA (its ca.key).
var ErrExists = errors.New("already holds a CA")

// writeFile writes every file of the package; tests replace it to crash
// between, or in the middle of, writes.
var writeFile = keystore.WriteFileAtomic

// CA is a certificate authority kept in a directory.
type CA struct {
	Dir       string
	Authority *certs.Authority
}

// CertPath is the path of the CA certificate.
func (c *CA) CertPath() string { return filepath.Join(c.Dir, CertFile) }

// KeyPath is the path of the CA key.
func (c *CA) KeyPath() string { return filepath.Join(c.Dir, KeyFile) }

// CRLPath is the path of the revocation list.
func (c *CA) CRLPath() string { return filepath.Join(c.Dir, CRLFile) }

// CertPEM is the CA certificate, PEM encoded.
func (c *CA) CertPEM() []byte { return certs.EncodeCertPEM(c.Authority.Cert) }

// Holds reports whether dir holds a CA: a ca.key, which Create writes
// last.
func Holds(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, KeyFile))
	return err == nil
}

// Create makes a new CA named name in dir (created with mode 0700 when
// missing), valid from notBefore for validity, and writes ca.crt and then
// ca.key. rand (nil: crypto/rand) supplies the key and the serial, so a
// test can replay a CA. It refuses a directory that holds a ca.key
// (ErrExists); on an error it removes what it wrote, and dir if it made
// it.
func Create(dir, name string, notBefore time.Time, validity time.Duration, rand io.Reader) (*CA, error) {
	c := &CA{Dir: dir}
	if Holds(dir) {
		return nil, fmt.Errorf("%s %w (%s exists)", dir, ErrExists, c.KeyPath())
	}
	a, err := certs.NewAuthority(name, notBefore, validity, rand)
	if err != nil {
		return nil, err
	}
	c.Authority = a
	keyPEM, err := certs.EncodePrivateKeyPEM(a.Key)
	if err != nil {
		return nil, err
	}
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	undo := func(err error) (*CA, error) {
		if created {
			os.RemoveAll(dir)
		}
		return nil, err
	}
	if err := writeFile(c.CertPath(), c.CertPEM(), 0o644); err != nil {
		return undo(err)
	}
	// Last: its presence marks a complete CA.
	if err := writeFile(c.KeyPath(), keyPEM, 0o600); err != nil {
		os.Remove(c.CertPath())
		return undo(err)
	}
	return c, nil
}

// Load reads the CA in dir and checks that its key and certificate belong
// together and make a CA. Every error is one line naming the file or the
// directory at fault.
func Load(dir string) (*CA, error) {
	c := &CA{Dir: dir}
	certPEM, err := os.ReadFile(c.CertPath())
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(c.KeyPath())
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	if c.Authority, err = certs.LoadAuthority(certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("CA in %s: %w", dir, err)
	}
	return c, nil
}

// Request is what a certificate request names: the subject's public key
// and, from a .csr, its name ("" for a bare public key).
type Request struct {
	PublicKey ed25519.PublicKey
	Name      string
}

// ReadRequest reads a certificate request (the .csr a party's init
// writes) or a PEM public key from path.
func ReadRequest(path string) (Request, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Request{}, fmt.Errorf("request: %w", err)
	}
	pub, name, err := certs.ReadSubjectKey(b)
	if err != nil {
		return Request{}, fmt.Errorf("request %s: %w", path, err)
	}
	return Request{PublicKey: pub, Name: name}, nil
}

// Issue certifies req's key as req.Name in role (node, project or
// client), valid from notBefore to notAfter.
func (c *CA) Issue(req Request, role certs.Role, notBefore, notAfter time.Time) (*x509.Certificate, error) {
	return c.Authority.Issue(certs.IssueRequest{
		PublicKey: req.PublicKey, Role: role, Name: req.Name, NotBefore: notBefore, NotAfter: notAfter,
	})
}

// WriteCert writes cert to path, PEM encoded, readable by all.
func WriteCert(path string, cert *x509.Certificate) error {
	return writeFile(path, certs.EncodeCertPEM(cert), 0o644)
}

// Party describes a data directory for Certify to create.
type Party struct {
	Dir  string
	Role certs.Role
	Name string
	// Now dates the party's position record; its certificate is valid
	// from an hour before (clocks differ) until Validity after.
	Now      time.Time
	Validity time.Duration // default a year
	Rand     io.Reader     // the party's keys; nil: crypto/rand
}

// Certify creates the party's data directory (keystore.Init, trusting
// this CA), issues the certificate its request asks for, writes it there
// and returns the directory loaded: what `up <role> init` followed by
// `up ca issue` does, in one call.
func (c *CA) Certify(p Party) (*keystore.Identity, error) {
	if p.Validity == 0 {
		p.Validity = 365 * 24 * time.Hour
	}
	csrPath, err := keystore.Init(p.Dir, p.Role, p.Name, c.CertPEM(), p.Now, p.Rand)
	if err != nil {
		return nil, err
	}
	req, err := ReadRequest(csrPath)
	if err != nil {
		return nil, err
	}
	req.Name = p.Name
	cert, err := c.Issue(req, p.Role, p.Now.Add(-time.Hour), p.Now.Add(p.Validity))
	if err != nil {
		return nil, err
	}
	if err := WriteCert(keystore.Paths{Dir: p.Dir, Role: p.Role}.Cert(), cert); err != nil {
		return nil, err
	}
	return keystore.Load(p.Dir, p.Role, p.Now)
}

// RevocationList returns the CA's revocation list, nil when crl.pem does
// not exist yet.
func (c *CA) RevocationList() (*certs.RevocationList, error) {
	b, err := os.ReadFile(c.CRLPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.CRLPath(), err)
	}
	rl, err := certs.ParseRevocationList(b, c.Authority.Cert)
	if err != nil {
		return nil, fmt.Errorf("existing %s: %w", c.CRLPath(), err)
	}
	return rl, nil
}

// Revoke adds serials to the CA's revocation list, signs the new list
// (numbered one up, valid from now until nextUpdate later) and writes it
// to crl.pem. It returns the new list and the serials the old list
// revoked already; when it revoked them all the list is nil and nothing
// is written.
func (c *CA) Revoke(serials []*big.Int, now time.Time, nextUpdate time.Duration) (rl *certs.RevocationList, already []*big.Int, err error) {
	prev, err := c.RevocationList()
	if err != nil {
		return nil, nil, err
	}
	var fresh []*big.Int
	for _, n := range serials {
		if prev.IsRevoked(n) {
			already = append(already, n)
			continue
		}
		fresh = append(fresh, n)
	}
	if len(fresh) == 0 {
		return nil, already, nil
	}
	if rl, err = c.Authority.Revoke(prev, fresh, now, nextUpdate); err != nil {
		return nil, already, err
	}
	if err := writeFile(c.CRLPath(), rl.PEM(), 0o644); err != nil {
		return nil, already, err
	}
	return rl, already, nil
}

// IssuedSerial reads the certificate file at path and returns its serial
// if this CA issued it.
func (c *CA) IssuedSerial(path string) (*big.Int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	cert, err := certs.DecodeCertPEM(b)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", path, err)
	}
	if err := cert.CheckSignatureFrom(c.Authority.Cert); err != nil {
		return nil, fmt.Errorf("certificate %s was not issued by this CA: %w", path, err)
	}
	return cert.SerialNumber, nil
}
