package job

import (
	"bytes"
	"fmt"

	"github.com/transparency-dev/merkle/proof"
)

// A job's place is where in the keyspace its r replicas sit: the
// position of its place key. A spec signed alone is placed by its own
// key; the specs of a signed submission batch share one place, the
// batch's root (docs/design.md, "a submission batch is the unit of
// placement"), so a batch's jobs share their replicas and travel
// between the same nodes together. The place is a function of the
// signed spec; the listing repeats it (Listing.Place) for those who
// hold only the listing — index nodes and clients — and a node holding
// both checks they agree (Listing.Matches).

// placePrefix begins the place key of a batch: the prefix, then the
// batch's 32-byte Merkle root.
const placePrefix = "/up/place/"

// PlaceRootLen is the length of a batch root as a listing names it.
const PlaceRootLen = rfc6962Size

// MaxPlacedBatch bounds the specs one signed batch holds, and so the
// jobs one place holds: a project's batch is a hot spot of this many
// jobs at most on r nodes (the submission signs 64).
const MaxPlacedBatch = 1024

// PlaceKey is the key whose position places a job of key: key itself
// when root is empty (a spec signed alone), else its batch's place key.
func PlaceKey(key, root []byte) []byte {
	if len(root) == 0 {
		return key
	}
	return append([]byte(placePrefix), root...)
}

// BatchRoot returns the Merkle root of the batch the spec was signed in
// (nil for a spec signed alone): the root its path leads to from its
// leaf. It does not check the signature (VerifyOnce does); an error
// wraps ErrMalformed.
func (s *Signed) BatchRoot() ([]byte, error) {
	if len(s.Path) == 0 {
		return nil, nil
	}
	c, err := DecodeBatchPath(s.Path)
	if err != nil {
		return nil, err
	}
	root, err := proof.RootFromInclusionProof(treeHasher, c.Index, c.Size, treeHasher.HashLeaf(signPayload(s.Spec)), c.Hashes)
	if err != nil {
		return nil, fmt.Errorf("%w: batch path: %v", ErrMalformed, err)
	}
	return root, nil
}

// PlaceKey is the signed job's place key (PlaceKey of its key and batch
// root).
func (s *Signed) PlaceKey() ([]byte, error) {
	root, err := s.BatchRoot()
	if err != nil {
		return nil, err
	}
	return PlaceKey(s.Key(), root), nil
}

// LookupKey is the key a job of key is looked up by when a party holds
// its place key as place: place, or key when place is empty (a job placed
// by its key).
func LookupKey(key, place []byte) []byte {
	if len(place) == 0 {
		return key
	}
	return place
}

// PlaceKey is the place key of the listed job: its key, or its batch's
// place key when the listing names one.
func (l *Listing) PlaceKey() []byte { return PlaceKey(l.Job, l.Place) }

// placeMatches reports whether a listing's Place is the signed spec's
// batch root (both empty for a spec signed alone).
func placeMatches(place []byte, s *Signed) bool {
	root, err := s.BatchRoot()
	return err == nil && bytes.Equal(place, root)
}
