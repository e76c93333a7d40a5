package certs

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"time"
)

// MaxCertSize is the largest certificate DER, in bytes, VerifyCert accepts.
const MaxCertSize = 16 << 10

// verifyCacheSize is how many signature-checked certificates a Verifier
// remembers. When full, the oldest entry is evicted (FIFO).
const verifyCacheSize = 4096

// Identity is what a verified certificate says. Cert and the slices and
// big.Int it shares with Cert may be shared with other callers (the Verifier
// caches parsed certificates) and must be treated as read-only.
type Identity struct {
	Role      Role
	Name      string // subject CommonName
	Serial    *big.Int
	PublicKey ed25519.PublicKey
	NotBefore time.Time
	NotAfter  time.Time
	Cert      *x509.Certificate
}

// checkedCert is a certificate whose static properties (Ed25519 key, leaf,
// one valid role, signed by the CA) have been verified.
type checkedCert struct {
	cert *x509.Certificate
	role Role
	pub  ed25519.PublicKey
}

// Verifier checks certificates against one CA and the newest revocation list
// it has seen. Safe for concurrent use. It caches successful signature checks
// by SHA-256 of the DER (at most 4096 entries, oldest evicted first) so a
// certificate's signature is verified once; validity window, role and
// revocation are re-checked on every call.
type Verifier struct {
	ca    *x509.Certificate
	caKey ed25519.PublicKey // nil if ca is unusable; then everything fails

	mu sync.RWMutex
	rl *RevocationList

	cacheMu sync.RWMutex
	cache   map[[sha256.Size]byte]*checkedCert
	order   [][sha256.Size]byte // ring buffer of cache keys, insertion order
	next    int                 // next slot in order to overwrite once full
}

// NewVerifier returns a Verifier trusting ca. If ca is nil, has no Ed25519
// key or is not a CA certificate, the Verifier rejects every certificate with
// ErrUnknownIssuer.
func NewVerifier(ca *x509.Certificate) *Verifier {
	v := &Verifier{
		ca:    ca,
		cache: make(map[[sha256.Size]byte]*checkedCert),
	}
	if ca != nil && ca.IsCA && ca.BasicConstraintsValid {
		if k, ok := ca.PublicKey.(ed25519.PublicKey); ok {
			v.caKey = k
		}
	}
	return v
}

// CA returns the CA certificate the Verifier trusts.
func (v *Verifier) CA() *x509.Certificate { return v.ca }

// SetRevocationList adopts rl if its Number is higher than the current
// list's (or there is none) and reports whether it did. rl must have been
// produced by ParseRevocationList (or Revoke) with this Verifier's CA; a nil
// rl, a hand-built one, or one signed by a different key is refused.
func (v *Verifier) SetRevocationList(rl *RevocationList) bool {
	if rl == nil || rl.Number == nil || v.caKey == nil || !bytes.Equal(rl.issuerKey, v.caKey) {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.rl != nil && rl.Number.Cmp(v.rl.Number) <= 0 {
		return false
	}
	v.rl = rl
	return true
}

// RevocationList returns the newest adopted list, or nil.
func (v *Verifier) RevocationList() *RevocationList {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.rl
}

// IsRevoked reports whether serial is on the current revocation list.
func (v *Verifier) IsRevoked(serial *big.Int) bool {
	return v.RevocationList().IsRevoked(serial)
}

// VerifyCert parses der and checks, in order: size (at most MaxCertSize
// bytes) and syntax, Ed25519 key, no unhandled critical extensions
// (ErrMalformed); not a CA certificate and exactly one OU naming a node,
// project or client role (ErrWrongRole); issued and signed by the CA
// (ErrUnknownIssuer, which also covers forged or tampered signatures and
// self-signed certificates); role is one of roles, or any leaf role if roles
// is empty (ErrWrongRole); NotBefore <= now <= NotAfter (ErrNotYetValid,
// ErrExpired); serial not on the current revocation list (ErrRevoked).
//
// The first four groups depend only on der and are cached after success; the
// rest is checked on every call.
func (v *Verifier) VerifyCert(der []byte, now time.Time, roles ...Role) (*Identity, error) {
	if len(der) == 0 || len(der) > MaxCertSize {
		return nil, fmt.Errorf("certs: verify certificate: DER is %d bytes, want 1..%d: %w", len(der), MaxCertSize, ErrMalformed)
	}
	sum := sha256.Sum256(der)
	cc := v.lookup(sum)
	if cc == nil {
		var err error
		if cc, err = v.check(der); err != nil {
			return nil, err
		}
		v.store(sum, cc)
	}
	c := cc.cert
	if len(roles) > 0 && !slices.Contains(roles, cc.role) {
		return nil, fmt.Errorf("certs: verify certificate %q: role %q, want one of %v: %w", c.Subject.CommonName, cc.role, roles, ErrWrongRole)
	}
	if now.Before(c.NotBefore) {
		return nil, fmt.Errorf("certs: verify certificate %q: not valid before %v (now %v): %w", c.Subject.CommonName, c.NotBefore, now, ErrNotYetValid)
	}
	if now.After(c.NotAfter) {
		return nil, fmt.Errorf("certs: verify certificate %q: expired at %v (now %v): %w", c.Subject.CommonName, c.NotAfter, now, ErrExpired)
	}
	if v.IsRevoked(c.SerialNumber) {
		return nil, fmt.Errorf("certs: verify certificate %q: serial %x: %w", c.Subject.CommonName, c.SerialNumber, ErrRevoked)
	}
	return &Identity{
		Role:      cc.role,
		Name:      c.Subject.CommonName,
		Serial:    c.SerialNumber,
		PublicKey: cc.pub,
		NotBefore: c.NotBefore,
		NotAfter:  c.NotAfter,
		Cert:      c,
	}, nil
}

// check performs the time-independent checks of VerifyCert, cheapest first.
func (v *Verifier) check(der []byte) (*checkedCert, error) {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: verify certificate: %v: %w", err, ErrMalformed)
	}
	name := c.Subject.CommonName
	pub, ok := c.PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("certs: verify certificate %q: key is %T, not ed25519: %w", name, c.PublicKey, ErrMalformed)
	}
	if len(c.UnhandledCriticalExtensions) > 0 {
		return nil, fmt.Errorf("certs: verify certificate %q: unhandled critical extension %v: %w", name, c.UnhandledCriticalExtensions[0], ErrMalformed)
	}
	if c.IsCA {
		return nil, fmt.Errorf("certs: verify certificate %q: is a CA certificate, not a leaf: %w", name, ErrWrongRole)
	}
	if len(c.Subject.OrganizationalUnit) != 1 {
		return nil, fmt.Errorf("certs: verify certificate %q: %d OU values, want exactly one role: %w", name, len(c.Subject.OrganizationalUnit), ErrWrongRole)
	}
	role := Role(c.Subject.OrganizationalUnit[0])
	if !isLeafRole(role) {
		return nil, fmt.Errorf("certs: verify certificate %q: role %q is not node, project or client: %w", name, role, ErrWrongRole)
	}
	if v.caKey == nil {
		return nil, fmt.Errorf("certs: verify certificate %q: verifier has no usable CA: %w", name, ErrUnknownIssuer)
	}
	if !bytes.Equal(c.RawIssuer, v.ca.RawSubject) {
		return nil, fmt.Errorf("certs: verify certificate %q: issuer %q is not our CA %q: %w", name, c.Issuer.CommonName, v.ca.Subject.CommonName, ErrUnknownIssuer)
	}
	if err := c.CheckSignatureFrom(v.ca); err != nil {
		return nil, fmt.Errorf("certs: verify certificate %q: signature: %v: %w", name, err, ErrUnknownIssuer)
	}
	return &checkedCert{cert: c, role: role, pub: pub}, nil
}

// lookup returns the cached check result for the DER hash, or nil.
func (v *Verifier) lookup(sum [sha256.Size]byte) *checkedCert {
	v.cacheMu.RLock()
	defer v.cacheMu.RUnlock()
	return v.cache[sum]
}

// store caches a successful check, evicting the oldest entry when full.
func (v *Verifier) store(sum [sha256.Size]byte, cc *checkedCert) {
	v.cacheMu.Lock()
	defer v.cacheMu.Unlock()
	if _, ok := v.cache[sum]; ok {
		return
	}
	if len(v.order) < verifyCacheSize {
		v.order = append(v.order, sum)
	} else {
		delete(v.cache, v.order[v.next])
		v.order[v.next] = sum
		v.next = (v.next + 1) % verifyCacheSize
	}
	v.cache[sum] = cc
}
