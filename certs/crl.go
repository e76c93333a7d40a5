package certs

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// Limits on revocation lists.
const (
	// MaxCRLSize is the largest CRL input, in bytes (PEM or DER), that
	// ParseRevocationList accepts and the largest DER that Revoke produces.
	MaxCRLSize = 1 << 20
	// MaxCRLEntries is the largest number of revoked serials a CRL may hold.
	MaxCRLEntries = 100_000
)

// RevocationList is a parsed and signature-checked CRL.
type RevocationList struct {
	Number     *big.Int  // CRL number; strictly increasing across the CA's lists
	ThisUpdate time.Time // when the list was issued (whole seconds)
	NextUpdate time.Time // when the CA promises a newer list (whole seconds)
	DER        []byte    // the signed CRL as distributed

	revoked   map[string]time.Time // serialKey -> revocation time
	serials   []*big.Int           // ascending, no duplicates
	issuerKey ed25519.PublicKey    // the CA key that signed DER
}

// serialKey renders serial as a map key: a sign byte followed by the
// big-endian magnitude, written into buf when it fits so lookups do not
// allocate.
func serialKey(buf []byte, serial *big.Int) []byte {
	sign := byte(0)
	if serial.Sign() < 0 {
		sign = 1
	}
	n := (serial.BitLen() + 7) / 8
	if 1+n > cap(buf) {
		return append([]byte{sign}, serial.Bytes()...)
	}
	k := buf[:1+n]
	k[0] = sign
	serial.FillBytes(k[1:])
	return k
}

// PEM returns the list encoded as an "X509 CRL" PEM block.
func (rl *RevocationList) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemCRL, Bytes: rl.DER})
}

// IsRevoked reports whether serial is on the list. A nil list or serial
// revokes nothing.
func (rl *RevocationList) IsRevoked(serial *big.Int) bool {
	if rl == nil || serial == nil {
		return false
	}
	var buf [40]byte
	_, ok := rl.revoked[string(serialKey(buf[:], serial))]
	return ok
}

// Serials returns the revoked serials in ascending order. The slice is a
// fresh copy; the big.Ints must not be modified. A nil list has none.
func (rl *RevocationList) Serials() []*big.Int {
	if rl == nil {
		return nil
	}
	return slices.Clone(rl.serials)
}

// ParseRevocationList accepts an "X509 CRL" PEM block or raw DER, checks that
// it was signed by ca (issuer name and CheckSignatureFrom; failures wrap
// ErrUnknownIssuer) and returns it parsed. Input over MaxCRLSize bytes, a
// list over MaxCRLEntries entries, or a list without a CRL number is
// rejected with ErrMalformed. It does not look at the clock: compare
// NextUpdate with the current time yourself if staleness matters.
func ParseRevocationList(b []byte, ca *x509.Certificate) (*RevocationList, error) {
	if len(b) > MaxCRLSize {
		return nil, fmt.Errorf("certs: parse revocation list: input is %d bytes, max %d: %w", len(b), MaxCRLSize, ErrMalformed)
	}
	if ca == nil {
		return nil, fmt.Errorf("certs: parse revocation list: no CA certificate given: %w", ErrUnknownIssuer)
	}
	caKey, ok := ca.PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("certs: parse revocation list: CA key is %T, not ed25519: %w", ca.PublicKey, ErrUnknownIssuer)
	}
	der := b
	if bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("-----BEGIN")) {
		block, _ := pem.Decode(b)
		if block == nil {
			return nil, fmt.Errorf("certs: parse revocation list: bad PEM: %w", ErrMalformed)
		}
		if block.Type != pemCRL {
			return nil, fmt.Errorf("certs: parse revocation list: PEM type is %q, want %q: %w", block.Type, pemCRL, ErrMalformed)
		}
		der = block.Bytes
	}
	crl, err := x509.ParseRevocationList(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse revocation list: %v: %w", err, ErrMalformed)
	}
	if len(crl.RevokedCertificateEntries) > MaxCRLEntries {
		return nil, fmt.Errorf("certs: parse revocation list: %d entries, max %d: %w", len(crl.RevokedCertificateEntries), MaxCRLEntries, ErrMalformed)
	}
	if crl.Number == nil || crl.Number.Sign() < 0 {
		return nil, fmt.Errorf("certs: parse revocation list: missing or negative CRL number: %w", ErrMalformed)
	}
	if !bytes.Equal(crl.RawIssuer, ca.RawSubject) {
		return nil, fmt.Errorf("certs: parse revocation list: issuer does not match CA %q: %w", ca.Subject.CommonName, ErrUnknownIssuer)
	}
	if err := crl.CheckSignatureFrom(ca); err != nil {
		return nil, fmt.Errorf("certs: parse revocation list: signature: %v: %w", err, ErrUnknownIssuer)
	}
	rl := &RevocationList{
		Number:     crl.Number,
		ThisUpdate: crl.ThisUpdate,
		NextUpdate: crl.NextUpdate,
		DER:        bytes.Clone(der),
		revoked:    make(map[string]time.Time, len(crl.RevokedCertificateEntries)),
		issuerKey:  caKey,
	}
	var buf [40]byte
	for _, e := range crl.RevokedCertificateEntries {
		if e.SerialNumber == nil {
			return nil, fmt.Errorf("certs: parse revocation list: entry without serial: %w", ErrMalformed)
		}
		k := string(serialKey(buf[:], e.SerialNumber))
		if _, dup := rl.revoked[k]; dup {
			continue
		}
		rl.revoked[k] = e.RevocationTime
		rl.serials = append(rl.serials, e.SerialNumber)
	}
	slices.SortFunc(rl.serials, (*big.Int).Cmp)
	return rl, nil
}

// Revoke returns a new CRL that contains prev's entries (prev may be nil)
// plus the given serials, with Number = prev.Number+1 (or 1),
// ThisUpdate=now, NextUpdate=now+validity. Entries already on prev keep their
// revocation time; new ones get now. Serials must be positive; duplicates are
// merged. An empty serials list re-publishes prev with a fresh window. prev
// must have been signed by a (ErrUnknownIssuer otherwise).
func (a *Authority) Revoke(prev *RevocationList, serials []*big.Int, now time.Time, validity time.Duration) (*RevocationList, error) {
	if a == nil || a.Cert == nil || len(a.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("certs: revoke: authority has no certificate or key")
	}
	if validity <= 0 {
		return nil, fmt.Errorf("certs: revoke: validity %v is not positive", validity)
	}
	number := big.NewInt(1)
	revoked := map[string]time.Time{}
	var all []*big.Int
	if prev != nil {
		if !bytes.Equal(prev.issuerKey, a.Key.Public().(ed25519.PublicKey)) {
			return nil, fmt.Errorf("certs: revoke: previous list was not signed by this CA: %w", ErrUnknownIssuer)
		}
		if prev.Number == nil {
			return nil, fmt.Errorf("certs: revoke: previous list has no number: %w", ErrMalformed)
		}
		number.Add(prev.Number, number)
		for _, s := range prev.serials {
			k := string(serialKey(nil, s))
			revoked[k] = prev.revoked[k]
			all = append(all, s)
		}
	}
	for i, s := range serials {
		if s == nil || s.Sign() <= 0 {
			return nil, fmt.Errorf("certs: revoke: serial #%d (%v) is not a positive integer", i, s)
		}
		k := string(serialKey(nil, s))
		if _, dup := revoked[k]; dup {
			continue
		}
		revoked[k] = now
		all = append(all, new(big.Int).Set(s))
	}
	if len(all) > MaxCRLEntries {
		return nil, fmt.Errorf("certs: revoke: %d entries, max %d", len(all), MaxCRLEntries)
	}
	slices.SortFunc(all, (*big.Int).Cmp)
	entries := make([]x509.RevocationListEntry, len(all))
	for i, s := range all {
		entries[i] = x509.RevocationListEntry{SerialNumber: s, RevocationTime: revoked[string(serialKey(nil, s))]}
	}
	tmpl := &x509.RevocationList{
		SignatureAlgorithm:        x509.PureEd25519,
		RevokedCertificateEntries: entries,
		Number:                    number,
		ThisUpdate:                now,
		NextUpdate:                now.Add(validity),
	}
	der, err := x509.CreateRevocationList(randOrDefault(nil), tmpl, a.Cert, a.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: revoke: create CRL: %w", err)
	}
	// Both encodings must stay parseable by ParseRevocationList; PEM is the
	// larger one.
	if n := len(pem.EncodeToMemory(&pem.Block{Type: pemCRL, Bytes: der})); n > MaxCRLSize {
		return nil, fmt.Errorf("certs: revoke: CRL PEM would be %d bytes, max %d", n, MaxCRLSize)
	}
	rl, err := ParseRevocationList(der, a.Cert)
	if err != nil {
		return nil, fmt.Errorf("certs: revoke: re-parse new CRL: %w", err)
	}
	return rl, nil
}
