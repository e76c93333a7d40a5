package job

import (
	"crypto/ed25519"
	"fmt"

	"github.com/up-pool/up/codec"
)

// Domains of the batch signatures over a submission's specs and listings
// (batchsig.go).
const (
	specBatchDomain    = "up/job-batch/v1\x00"
	listingBatchDomain = "up/listing-batch/v1\x00"
)

// SignBatch encodes specs canonically and signs them with the project key
// under one signature: one spec is signed alone (Sign), two or more as
// the leaves of a batch, each carrying the batch's signature and its
// inclusion path. A verifier checks the root's signature once per batch
// (VerifyOnce).
func SignBatch(specs []*Spec, key ed25519.PrivateKey) ([]*Signed, error) {
	switch len(specs) {
	case 0:
		return nil, nil
	case 1:
		s, err := Sign(specs[0], key)
		return []*Signed{s}, err
	}
	b, err := SignSpecBatch(specs, key)
	if err != nil {
		return nil, err
	}
	return b.Signed, nil
}

// SpecBatch is a batch of specs signed under one signature, with what
// signing it computed: each signed spec's encoding and the batch's root.
type SpecBatch struct {
	Signed  []*Signed
	Encoded [][]byte // Signed[i].Encode()
	Root    []byte   // the root of the batch's tree: Signed[i].BatchRoot(), its jobs' place
}

// SignSpecBatch is SignBatch for two or more specs, returning the
// encodings and root it computed, which a submitter would otherwise
// compute again (the encoding to hash the CID, the root from each path to
// place the job).
func SignSpecBatch(specs []*Spec, key ed25519.PrivateKey) (*SpecBatch, error) {
	encoded := make([][]byte, len(specs))
	payloads := make([][]byte, len(specs))
	for i, spec := range specs {
		if err := spec.Validate(); err != nil {
			return nil, fmt.Errorf("spec %d: %w", i, err)
		}
		b, err := codec.Marshal(spec)
		if err != nil {
			return nil, err
		}
		encoded[i], payloads[i] = b, signPayload(b)
	}
	sig, root, paths, err := signTree(specBatchDomain, payloads, signWith(key))
	if err != nil {
		return nil, fmt.Errorf("spec batch: %w", err)
	}
	out := &SpecBatch{Signed: make([]*Signed, len(specs)), Encoded: make([][]byte, len(specs)), Root: root}
	for i := range specs {
		s := &Signed{Spec: encoded[i], Sig: sig, Path: paths[i]}
		out.Signed[i], out.Encoded[i] = s, s.Encode()
		if n := len(out.Encoded[i]); n > MaxSignedSize {
			return nil, fmt.Errorf("%w: spec %d signed in its batch is %d bytes (max %d)", ErrMalformed, i, n, MaxSignedSize)
		}
	}
	return out, nil
}

// SignListingBatch signs listings with the project key under one
// signature, as SignBatch signs specs.
func SignListingBatch(ls []*Listing, key ed25519.PrivateKey) ([]*SignedListing, error) {
	switch len(ls) {
	case 0:
		return nil, nil
	case 1:
		s, err := SignListing(ls[0], key)
		return []*SignedListing{s}, err
	}
	encoded := make([][]byte, len(ls))
	payloads := make([][]byte, len(ls))
	for i, l := range ls {
		b, err := l.Encode()
		if err != nil {
			return nil, err
		}
		encoded[i], payloads[i] = b, append([]byte(listingDomain), b...)
	}
	sig, paths, err := signBatch(listingBatchDomain, payloads, key)
	if err != nil {
		return nil, fmt.Errorf("listing batch: %w", err)
	}
	out := make([]*SignedListing, len(ls))
	for i := range ls {
		out[i] = &SignedListing{Listing: encoded[i], Sig: sig, Path: paths[i]}
	}
	return out, nil
}
