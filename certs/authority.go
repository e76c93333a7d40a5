package certs

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"time"
)

// Authority is the CA: its self-signed certificate and key.
type Authority struct {
	Cert *x509.Certificate
	Key  ed25519.PrivateKey
}

// serialBits is the size of the random certificate serial numbers.
const serialBits = 128

// randomSerial returns a uniformly random, non-zero serialBits-bit serial
// read from r (nil means crypto/rand).
func randomSerial(r io.Reader) (*big.Int, error) {
	r = randOrDefault(r)
	var buf [serialBits / 8]byte
	for range 8 {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return nil, fmt.Errorf("certs: read random serial: %w", err)
		}
		s := new(big.Int).SetBytes(buf[:])
		if s.Sign() > 0 {
			return s, nil
		}
	}
	return nil, fmt.Errorf("certs: read random serial: random source keeps returning zero")
}

// NewAuthority creates a CA with a fresh Ed25519 key and a self-signed
// certificate: Subject CN=name, OU="ca", valid from now for validity, IsCA,
// BasicConstraintsValid, MaxPathLenZero (it signs leaves only), key usage
// CertSign|CRLSign. rand (nil means crypto/rand) supplies the key seed and
// the 128-bit serial.
func NewAuthority(name string, now time.Time, validity time.Duration, rand io.Reader) (*Authority, error) {
	if err := validateName(name); err != nil {
		return nil, fmt.Errorf("certs: new authority: %w", err)
	}
	if validity <= 0 {
		return nil, fmt.Errorf("certs: new authority: validity %v is not positive", validity)
	}
	key, err := GenerateKey(randOrDefault(rand))
	if err != nil {
		return nil, fmt.Errorf("certs: new authority: %w", err)
	}
	serial, err := randomSerial(rand)
	if err != nil {
		return nil, fmt.Errorf("certs: new authority: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, OrganizationalUnit: []string{string(RoleCA)}},
		NotBefore:             now,
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		SignatureAlgorithm:    x509.PureEd25519,
	}
	pub := key.Public().(ed25519.PublicKey)
	der, err := x509.CreateCertificate(randOrDefault(rand), tmpl, tmpl, pub, key)
	if err != nil {
		return nil, fmt.Errorf("certs: new authority: create certificate: %w", err)
	}
	cert, err := parseCertDER(der)
	if err != nil {
		return nil, fmt.Errorf("certs: new authority: %w", err)
	}
	return &Authority{Cert: cert, Key: key}, nil
}

// LoadAuthority decodes a CA certificate and its private key (both PEM). It
// fails with ErrKeyMismatch if the key does not belong to the certificate,
// with ErrWrongRole if the certificate is not a CA (IsCA, basic constraints,
// CertSign usage), and with ErrBadSignature if its self-signature does not
// verify.
func LoadAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	cert, err := DecodeCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: load authority: certificate: %w", err)
	}
	key, err := DecodePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: load authority: key: %w", err)
	}
	certPub := cert.PublicKey.(ed25519.PublicKey) // DecodeCertPEM checked the type
	if !bytes.Equal(certPub, key.Public().(ed25519.PublicKey)) {
		return nil, fmt.Errorf("certs: load authority: private key does not match the certificate's public key: %w", ErrKeyMismatch)
	}
	if !cert.IsCA || !cert.BasicConstraintsValid || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("certs: load authority: certificate %q is not a CA certificate: %w", cert.Subject.CommonName, ErrWrongRole)
	}
	if err := cert.CheckSignatureFrom(cert); err != nil {
		return nil, fmt.Errorf("certs: load authority: self-signature: %v: %w", err, ErrBadSignature)
	}
	return &Authority{Cert: cert, Key: key}, nil
}

// IssueRequest describes a certificate for Authority.Issue.
type IssueRequest struct {
	PublicKey ed25519.PublicKey
	Role      Role      // node, project or client (not ca: error)
	Name      string    // subject CN; required, max 64 bytes, printable
	NotBefore time.Time // X.509 stores whole seconds; sub-second parts are truncated
	NotAfter  time.Time // must be after NotBefore
	Rand      io.Reader // nil => crypto/rand; used for the 128-bit random serial
}

// Issue signs a leaf certificate for req.PublicKey: Subject CN=Name,
// OU=[string(Role)], KeyUsageDigitalSignature, ExtKeyUsageAny, basic
// constraints present with IsCA false, a 128-bit random serial. It does not
// clamp the validity window to the CA's own.
func (a *Authority) Issue(req IssueRequest) (*x509.Certificate, error) {
	if a == nil || a.Cert == nil || len(a.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("certs: issue: authority has no certificate or key")
	}
	if len(req.PublicKey) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("certs: issue: public key length %d, want %d", len(req.PublicKey), ed25519.PublicKeySize)
	}
	if !isLeafRole(req.Role) {
		return nil, fmt.Errorf("certs: issue: role %q cannot be issued (valid: node, project, client)", req.Role)
	}
	if err := validateName(req.Name); err != nil {
		return nil, fmt.Errorf("certs: issue: %w", err)
	}
	if !req.NotAfter.After(req.NotBefore) {
		return nil, fmt.Errorf("certs: issue: NotAfter %v is not after NotBefore %v", req.NotAfter, req.NotBefore)
	}
	serial, err := randomSerial(req.Rand)
	if err != nil {
		return nil, fmt.Errorf("certs: issue: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: req.Name, OrganizationalUnit: []string{string(req.Role)}},
		NotBefore:             req.NotBefore,
		NotAfter:              req.NotAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
		BasicConstraintsValid: true,
		IsCA:                  false,
		SignatureAlgorithm:    x509.PureEd25519,
	}
	der, err := x509.CreateCertificate(randOrDefault(req.Rand), tmpl, a.Cert, req.PublicKey, a.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: issue %s certificate for %q: %w", req.Role, req.Name, err)
	}
	cert, err := parseCertDER(der)
	if err != nil {
		return nil, fmt.Errorf("certs: issue: %w", err)
	}
	return cert, nil
}
