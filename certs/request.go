package certs

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
)

// CreateRequest returns a PEM "CERTIFICATE REQUEST" (a PKCS#10 CSR) with
// subject CN=name, signed by key. The signature proves possession of key to
// the CA. name must satisfy the same rules as IssueRequest.Name.
func CreateRequest(key ed25519.PrivateKey, name string) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("certs: create request: private key length %d, want %d", len(key), ed25519.PrivateKeySize)
	}
	if err := validateName(name); err != nil {
		return nil, fmt.Errorf("certs: create request: %w", err)
	}
	tmpl := &x509.CertificateRequest{
		Subject:            pkix.Name{CommonName: name},
		SignatureAlgorithm: x509.PureEd25519,
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("certs: create request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemRequest, Bytes: der}), nil
}

// ParseRequest decodes the first PEM block of b, which must be a
// "CERTIFICATE REQUEST" (or the legacy "NEW CERTIFICATE REQUEST"), checks
// that its key is Ed25519 and that it is signed by that key, and returns the
// key and the subject CommonName. A bad self-signature wraps ErrBadSignature;
// anything else wraps ErrMalformed. The name is returned as found; Issue
// validates it.
func ParseRequest(b []byte) (pub ed25519.PublicKey, name string, err error) {
	block, err := decodeOnePEM(b, "certificate request", pemRequest, pemRequestOld)
	if err != nil {
		return nil, "", err
	}
	return parseRequestDER(block.Bytes)
}

// parseRequestDER is ParseRequest after PEM decoding.
func parseRequestDER(der []byte) (ed25519.PublicKey, string, error) {
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, "", fmt.Errorf("certs: parse certificate request: %v: %w", err, ErrMalformed)
	}
	pub, ok := csr.PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, "", fmt.Errorf("certs: parse certificate request: key is %T, not ed25519: %w", csr.PublicKey, ErrMalformed)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, "", fmt.Errorf("certs: parse certificate request: %v: %w", err, ErrBadSignature)
	}
	return pub, csr.Subject.CommonName, nil
}

// ReadSubjectKey accepts either a CSR PEM or a PUBLIC KEY PEM (what
// `up ca issue` takes as input) and returns the key and the name (empty for a
// bare public key). The first PEM block decides which; a CSR's signature is
// checked as in ParseRequest.
func ReadSubjectKey(b []byte) (pub ed25519.PublicKey, name string, err error) {
	block, err := decodeOnePEM(b, "subject key", pemRequest, pemRequestOld, pemPublicKey)
	if err != nil {
		return nil, "", err
	}
	if block.Type == pemPublicKey {
		pub, err := parsePublicKeyDER(block.Bytes)
		return pub, "", err
	}
	return parseRequestDER(block.Bytes)
}
