package job

import (
	"crypto/ed25519"
	"fmt"
	"slices"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/sigverify"
)

// FinishedSuffix makes a project's finished keyword: "<project>:finished".
const FinishedSuffix = ":finished"

// FinishedKeyword is the keyword under which a project's finished jobs are
// indexed.
func FinishedKeyword(project string) string { return project + FinishedSuffix }

// TrickleSuffix makes a project's trickle keyword: "<project>:trickle".
const TrickleSuffix = ":trickle"

// TrickleKeyword is the keyword under which the jobs whose replicas hold
// trickles (a sequence's progress) for the project are indexed.
func TrickleKeyword(project string) string { return project + TrickleSuffix }

// Listing is what a project allows the index to say about a job: its key,
// project, creation time, keywords (the spec's keywords and resource
// classes) and, for a job of a signed batch, its place (place.go). The project signs it at submission; index nodes verify it, so
// nobody can index a job under keywords its project did not give it.
// Besides Keywords, the job may be listed under FinishedKeyword(Project).
type Listing struct {
	_        struct{} `cbor:",toarray"`
	Job      []byte   // the job's key (CID bytes)
	Project  string
	Created  int64    // the spec's creation time, Unix ms
	Keywords []string // sorted, distinct
	// Place is the root of the batch the job's spec was signed in, which
	// places the job (PlaceKey); empty for a spec signed alone. Encoded
	// only when set: a listing without it keeps its four elements.
	Place []byte
}

// listingV1 is a listing without a place, encoded as every listing was
// before places: four elements.
type listingV1 struct {
	_        struct{} `cbor:",toarray"`
	Job      []byte
	Project  string
	Created  int64
	Keywords []string
}

// listingV1Fields is its element count (codec.ArrayLen): the layout is
// told by the count, without a failed decode of the other.
var listingV1Fields = codec.Fields(listingV1{})

// Encode is the listing's canonical encoding, which its project signs.
func (l *Listing) Encode() ([]byte, error) {
	if len(l.Place) == 0 {
		return codec.Marshal(&listingV1{Job: l.Job, Project: l.Project, Created: l.Created, Keywords: l.Keywords})
	}
	return codec.Marshal(l)
}

// decodeListingBody parses a listing in either layout.
func decodeListingBody(b []byte) (Listing, error) {
	var v1 listingV1
	if codec.ArrayLen(b) == listingV1Fields && codec.Unmarshal(b, &v1) == nil {
		return Listing{Job: v1.Job, Project: v1.Project, Created: v1.Created, Keywords: v1.Keywords}, nil
	}
	var l Listing
	if err := codec.Unmarshal(b, &l); err != nil {
		return l, err
	}
	if len(l.Place) != PlaceRootLen {
		return l, fmt.Errorf("place of %d bytes, want %d", len(l.Place), PlaceRootLen)
	}
	return l, nil
}

// SignedListing is a Listing and the project's signature over its
// canonical encoding.
type SignedListing struct {
	_       struct{} `cbor:",toarray"`
	Listing []byte
	Sig     []byte
	Path    []byte // the listing's place in a signed batch (BatchPath); empty: Sig signs the listing alone
}

// signedListingV1 is a signed listing without a Path, encoded as every
// listing was before batches: two elements.
type signedListingV1 struct {
	_       struct{} `cbor:",toarray"`
	Listing []byte
	Sig     []byte
}

// signedListingV1Fields is its element count (codec.ArrayLen): the layout is
// told by the count, without a failed decode of the other.
var signedListingV1Fields = codec.Fields(signedListingV1{})

const listingDomain = "up/listing/v1\x00"

// MaxListingSize bounds an encoded SignedListing, in bytes.
const MaxListingSize = 8 << 10

// ListingOf builds the listing of a signed spec (its Place empty when
// the spec's batch path leads nowhere: Matches then refuses it).
func ListingOf(s *Signed, spec *Spec) *Listing {
	kw := append(append([]string(nil), spec.Keywords...), spec.Resources...)
	slices.Sort(kw)
	kw = slices.Compact(kw)
	root, _ := s.BatchRoot()
	return &Listing{Job: s.Key(), Project: spec.Project, Created: spec.Created, Keywords: kw, Place: root}
}

// Allows reports whether the listing lets the job be indexed under kw.
func (l *Listing) Allows(kw string) bool {
	_, found := slices.BinarySearch(l.Keywords, kw)
	return found || kw == FinishedKeyword(l.Project) || kw == TrickleKeyword(l.Project)
}

// Matches reports whether the listing agrees with the signed spec it
// names, its place included.
// It is ListingOf compared field by field, without building the
// listing: the batch root is computed once, the keywords compared in
// place (a node checks every listing it stores with it).
func (l *Listing) Matches(s *Signed, spec *Spec) bool {
	return l.Project == spec.Project && l.Created == spec.Created &&
		keywordsAre(l.Keywords, spec.Keywords, spec.Resources) &&
		placeMatches(l.Place, s) && string(l.Job) == string(s.Key())
}

// keywordsAre reports whether sorted is the sorted set of the keywords in
// a and b (ListingOf's keywords), whatever their order and repeats in a
// and b.
func keywordsAre(sorted, a, b []string) bool {
	if !slices.IsSorted(sorted) {
		return false
	}
	distinct := 0
	for i, n := 0, len(a)+len(b); i < n; i++ {
		k := keywordAt(a, b, i)
		if _, found := slices.BinarySearch(sorted, k); !found {
			return false
		}
		first := true
		for j := 0; j < i && first; j++ {
			first = keywordAt(a, b, j) != k
		}
		if first {
			distinct++
		}
	}
	return distinct == len(sorted)
}

// keywordAt is the i-th keyword of a then b.
func keywordAt(a, b []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	return b[i-len(a)]
}

// SignListing signs a listing with the project key.
func SignListing(l *Listing, key ed25519.PrivateKey) (*SignedListing, error) {
	b, err := l.Encode()
	if err != nil {
		return nil, err
	}
	return &SignedListing{Listing: b, Sig: ed25519.Sign(key, append([]byte(listingDomain), b...))}, nil
}

// Encode is the canonical encoding of a signed listing.
func (s *SignedListing) Encode() []byte {
	return encodeSignedPair(s.Listing, s.Sig, s.Path)
}

// DecodeListing parses an encoded signed listing and checks its bounds.
func DecodeListing(b []byte) (*SignedListing, *Listing, error) {
	if len(b) > MaxListingSize {
		return nil, nil, fmt.Errorf("%w: listing of %d bytes (max %d)", ErrMalformed, len(b), MaxListingSize)
	}
	var s SignedListing
	var v1 signedListingV1
	if codec.ArrayLen(b) == signedListingV1Fields && codec.Unmarshal(b, &v1) == nil {
		s = SignedListing{Listing: v1.Listing, Sig: v1.Sig}
	} else if err := codec.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("%w: listing: %v", ErrMalformed, err)
	} else if _, err := DecodeBatchPath(s.Path); err != nil {
		return nil, nil, err
	}
	if len(s.Sig) != ed25519.SignatureSize {
		return nil, nil, fmt.Errorf("%w: listing signature of %d bytes", ErrMalformed, len(s.Sig))
	}
	l, err := decodeListingBody(s.Listing)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: listing: %v", ErrMalformed, err)
	}
	if _, err := ParseKey(l.Job); err != nil {
		return nil, nil, err
	}
	if l.Project == "" || len(l.Project) > MaxNameLen || l.Created <= 0 {
		return nil, nil, fmt.Errorf("%w: listing of project %q created %d", ErrMalformed, truncate(l.Project), l.Created)
	}
	if len(l.Keywords) == 0 || len(l.Keywords) > MaxKeywords+MaxResources || !slices.IsSorted(l.Keywords) ||
		len(slices.Compact(slices.Clone(l.Keywords))) != len(l.Keywords) {
		return nil, nil, fmt.Errorf("%w: listing keywords must be 1..%d, sorted and distinct", ErrMalformed, MaxKeywords+MaxResources)
	}
	for _, k := range l.Keywords {
		if err := ValidateKeyword(k); err != nil {
			return nil, nil, err
		}
	}
	if re, err := l.Encode(); err != nil || string(re) != string(s.Listing) {
		return nil, nil, fmt.Errorf("%w: listing not canonically encoded", ErrMalformed)
	}
	return &s, &l, nil
}

// Verify checks the listing's signature with the project's key.
func (s *SignedListing) Verify(pub ed25519.PublicKey) error {
	return s.VerifyOnce(pub, nil)
}

// VerifyOnce is Verify remembering valid signatures in once (a batch's
// root signature is verified once per party); nil once verifies every
// time.
func (s *SignedListing) VerifyOnce(pub ed25519.PublicKey, once *sigverify.Once) error {
	msg := append([]byte(listingDomain), s.Listing...)
	if len(s.Path) > 0 {
		var err error
		if msg, err = batchSigned(listingBatchDomain, msg, s.Path); err != nil {
			return fmt.Errorf("listing: %w: %w", ErrBadSignature, err)
		}
	}
	if len(pub) != ed25519.PublicKeySize || !once.Verify(pub, msg, s.Sig) {
		return fmt.Errorf("listing: %w", ErrBadSignature)
	}
	return nil
}
