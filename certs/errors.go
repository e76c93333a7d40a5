package certs

import "errors"

// Sentinel errors. Functions in this package wrap them with context
// (fmt.Errorf("...: %w", ErrX)); test with errors.Is.
var (
	// ErrMalformed means the input could not be decoded or is structurally
	// unacceptable: not PEM, wrong PEM type, bad DER, too large, a key that is
	// not Ed25519, trailing bytes, and so on.
	ErrMalformed = errors.New("certs: malformed input")

	// ErrUnknownIssuer means a certificate or revocation list was not signed
	// by the CA in question. This covers both a different issuer and a forged
	// or tampered signature: from the verifier's point of view the two are the
	// same thing (no key it trusts produced the signature), so certificate and
	// CRL signature failures are always reported as ErrUnknownIssuer, never as
	// ErrBadSignature.
	ErrUnknownIssuer = errors.New("certs: not signed by the trusted CA")

	// ErrWrongRole means the certificate's role is not one the caller
	// accepts, the certificate is a CA certificate where a leaf was expected,
	// or a certificate expected to be a CA is not one.
	ErrWrongRole = errors.New("certs: wrong role")

	// ErrExpired means the time given is after the certificate's NotAfter.
	ErrExpired = errors.New("certs: certificate expired")

	// ErrNotYetValid means the time given is before the certificate's
	// NotBefore.
	ErrNotYetValid = errors.New("certs: certificate not yet valid")

	// ErrRevoked means the certificate's serial is on the revocation list.
	ErrRevoked = errors.New("certs: certificate revoked")

	// ErrKeyMismatch means a private key does not belong to the certificate
	// or public key it was paired with.
	ErrKeyMismatch = errors.New("certs: key does not match")

	// ErrBadSignature means a self-contained signature did not verify: a
	// signed position record, a certificate signing request's
	// proof-of-possession, or a CA certificate's self-signature.
	ErrBadSignature = errors.New("certs: bad signature")
)
