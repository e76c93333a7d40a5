package project

import (
	"crypto/ed25519"
	"fmt"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
)

// Signing a job is job.Sign and job.SignListing with curve25519-voi's
// Ed25519 in place of crypto/ed25519: Ed25519 signatures are
// deterministic (RFC 8032), so the signed spec, its CID and the listing
// are byte for byte the same, for about a third of the CPU here (two
// signatures per job). jobDomain and listingDomain are the job package's
// (its signature payloads are unexported); TestSignAgreesWithJobSign pins
// them.
const (
	jobDomain     = "up/job/v1\x00"
	listingDomain = "up/listing/v1\x00"
)

// signSpec is job.Sign; it also returns the signed spec's encoding.
func signSpec(spec *job.Spec, key ed25519.PrivateKey) (*job.Signed, []byte, error) {
	if err := spec.Validate(); err != nil {
		return nil, nil, err
	}
	b, err := codec.Marshal(spec)
	if err != nil {
		return nil, nil, err
	}
	s := &job.Signed{Spec: b, Sig: voi.Sign(voi.PrivateKey(key), append([]byte(jobDomain), b...))}
	enc := s.Encode()
	if len(enc) > job.MaxSignedSize {
		// Decode would refuse it: do not sign what no node accepts.
		return nil, nil, fmt.Errorf("%w: signed spec of %d bytes (max %d)", job.ErrMalformed, len(enc), job.MaxSignedSize)
	}
	return s, enc, nil
}

// signListing is job.SignListing.
func signListing(l *job.Listing, key ed25519.PrivateKey) (*job.SignedListing, error) {
	b, err := l.Encode()
	if err != nil {
		return nil, err
	}
	return &job.SignedListing{Listing: b, Sig: voi.Sign(voi.PrivateKey(key), append([]byte(listingDomain), b...))}, nil
}
