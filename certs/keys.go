package certs

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// PEM block types used by this package.
const (
	pemPrivateKey  = "PRIVATE KEY"
	pemPublicKey   = "PUBLIC KEY"
	pemCertificate = "CERTIFICATE"
	pemRequest     = "CERTIFICATE REQUEST"
	pemRequestOld  = "NEW CERTIFICATE REQUEST"
	pemCRL         = "X509 CRL"
)

// MaxPEMSize is the largest input, in bytes, accepted by the key,
// certificate and request decoders (64 KiB). Revocation lists have their own
// limit, MaxCRLSize.
const MaxPEMSize = 64 << 10

// GenerateKey returns a new Ed25519 private key, reading its 32-byte seed
// from rand. A nil rand means crypto/rand.
func GenerateKey(rand io.Reader) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, fmt.Errorf("certs: generate ed25519 key: %w", err)
	}
	return priv, nil
}

// randOrDefault returns r, or crypto/rand.Reader if r is nil.
func randOrDefault(r io.Reader) io.Reader {
	if r == nil {
		return rand.Reader
	}
	return r
}

// EncodePrivateKeyPEM encodes k as a PKCS#8 "PRIVATE KEY" PEM block.
func EncodePrivateKeyPEM(k ed25519.PrivateKey) ([]byte, error) {
	if len(k) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("certs: encode private key: length %d, want %d", len(k), ed25519.PrivateKeySize)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("certs: encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

// decodeOnePEM returns the first PEM block in b, checking the size limit and
// that the block has the wanted type (one of types) and no headers (headers
// mean legacy encryption, which is not supported). what names the thing being
// decoded, for error messages.
func decodeOnePEM(b []byte, what string, types ...string) (*pem.Block, error) {
	if len(b) > MaxPEMSize {
		return nil, fmt.Errorf("certs: decode %s: input is %d bytes, max %d: %w", what, len(b), MaxPEMSize, ErrMalformed)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("certs: decode %s: no PEM block found: %w", what, ErrMalformed)
	}
	ok := false
	for _, t := range types {
		if block.Type == t {
			ok = true
			break
		}
	}
	if !ok {
		return nil, fmt.Errorf("certs: decode %s: PEM type is %q, want %s: %w", what, block.Type, quoteJoin(types), ErrMalformed)
	}
	if len(block.Headers) != 0 {
		return nil, fmt.Errorf("certs: decode %s: PEM headers (legacy encryption) not supported: %w", what, ErrMalformed)
	}
	return block, nil
}

// quoteJoin renders ss as "a" or "b" for error messages.
func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, " or ")
}

// DecodePrivateKeyPEM decodes the first PEM block of b, which must be a
// PKCS#8 "PRIVATE KEY" holding an Ed25519 key. Errors wrap ErrMalformed.
func DecodePrivateKeyPEM(b []byte) (ed25519.PrivateKey, error) {
	block, err := decodeOnePEM(b, "private key", pemPrivateKey)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: decode private key: %v: %w", err, ErrMalformed)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("certs: decode private key: key is %T, not ed25519: %w", k, ErrMalformed)
	}
	return priv, nil
}

// EncodePublicKeyPEM encodes pub as a PKIX "PUBLIC KEY" PEM block.
func EncodePublicKeyPEM(pub ed25519.PublicKey) ([]byte, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("certs: encode public key: length %d, want %d", len(pub), ed25519.PublicKeySize)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("certs: encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: der}), nil
}

// DecodePublicKeyPEM decodes the first PEM block of b, which must be a PKIX
// "PUBLIC KEY" holding an Ed25519 key. Errors wrap ErrMalformed.
func DecodePublicKeyPEM(b []byte) (ed25519.PublicKey, error) {
	block, err := decodeOnePEM(b, "public key", pemPublicKey)
	if err != nil {
		return nil, err
	}
	return parsePublicKeyDER(block.Bytes)
}

// parsePublicKeyDER parses a PKIX public key that must be Ed25519.
func parsePublicKeyDER(der []byte) (ed25519.PublicKey, error) {
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("certs: decode public key: %v: %w", err, ErrMalformed)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("certs: decode public key: key is %T, not ed25519: %w", k, ErrMalformed)
	}
	return pub, nil
}

// EncodeCertPEM encodes c's DER as a "CERTIFICATE" PEM block.
func EncodeCertPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: c.Raw})
}

// DecodeCertPEM decodes the first "CERTIFICATE" block in b (other block
// types before it are skipped) and parses it. It fails if there is none, the
// DER does not parse, or the certificate's key is not Ed25519. Errors wrap
// ErrMalformed. It checks no signature: use a Verifier or LoadAuthority.
func DecodeCertPEM(b []byte) (*x509.Certificate, error) {
	if len(b) > MaxPEMSize {
		return nil, fmt.Errorf("certs: decode certificate: input is %d bytes, max %d: %w", len(b), MaxPEMSize, ErrMalformed)
	}
	rest := b
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("certs: decode certificate: no CERTIFICATE PEM block found: %w", ErrMalformed)
		}
		if block.Type != pemCertificate {
			continue
		}
		return parseCertDER(block.Bytes)
	}
}

// parseCertDER parses a certificate whose key must be Ed25519.
func parseCertDER(der []byte) (*x509.Certificate, error) {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse certificate: %v: %w", err, ErrMalformed)
	}
	if _, ok := c.PublicKey.(ed25519.PublicKey); !ok {
		return nil, fmt.Errorf("certs: parse certificate: key is %T, not ed25519: %w", c.PublicKey, ErrMalformed)
	}
	return c, nil
}
