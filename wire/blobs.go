package wire

import (
	"fmt"

	"github.com/up-pool/up/blob"
)

// Blob protocol bounds, in bytes (counts where named so). A chunk request
// or reply is one chunk and a few dozen bytes of envelope; an offer is a
// statement, a manifest and at most one certificate.
const (
	// MaxBlobKeyLen bounds a manifest or chunk CID on the wire (a CIDv1
	// sha2-256 is 36 bytes).
	MaxBlobKeyLen = 64
	// MaxBlobOfferFrame bounds a BlobOffer request.
	MaxBlobOfferFrame = blob.MaxStatementSize + blob.MaxManifestSize + MaxCertBytes + 1<<10
	// MaxBlobOfferReply bounds a BlobOfferResponse: every chunk missing.
	MaxBlobOfferReply = blob.MaxChunks*(MaxBlobKeyLen+2) + 1<<10
	// MaxChunkFrame bounds a ChunkPut request and a ChunkGetResponse.
	MaxChunkFrame = blob.ChunkSize + 1<<10
	// MaxBlobGetFrame bounds a ManifestGet or ChunkGet request.
	MaxBlobGetFrame = 1 << 10
	// MaxManifestReply bounds a ManifestGetResponse.
	MaxManifestReply = blob.MaxStatementSize + blob.MaxManifestSize + 1<<10
)

// BlobOffer offers a blob: the project's signed statement and the
// manifest it names. The receiver checks the statement and stores both,
// charged to the project's quota, and answers the chunks it lacks, which
// the sender then sends with ChunkPut. Cert is the project certificate
// (DER) the statement's CertRef names: a node offering a blob (repair)
// sends it; a project may leave it out when it is its own current one.
// Replicate, from a project only, asks the receiver to place the blob,
// once it holds every chunk, on the r nodes closest to its key.
type BlobOffer struct {
	_         struct{} `cbor:",toarray"`
	Statement []byte   // blob.SignedStatement, encoded
	Manifest  []byte   // blob.Manifest, encoded
	Cert      []byte
	Replicate bool
}

// Validate bounds a decoded BlobOffer.
func (o *BlobOffer) Validate() error {
	switch {
	case len(o.Statement) == 0 || len(o.Statement) > blob.MaxStatementSize:
		return fmt.Errorf("blob offer statement of %d bytes (want 1..%d): %w", len(o.Statement), blob.MaxStatementSize, ErrMalformed)
	case len(o.Manifest) == 0 || len(o.Manifest) > blob.MaxManifestSize:
		return fmt.Errorf("blob offer manifest of %d bytes (want 1..%d): %w", len(o.Manifest), blob.MaxManifestSize, ErrMalformed)
	case len(o.Cert) > MaxCertBytes:
		return fmt.Errorf("blob offer certificate of %d bytes (max %d): %w", len(o.Cert), MaxCertBytes, ErrMalformed)
	}
	return nil
}

// BlobOfferResponse answers an accepted BlobOffer (a refusal is a
// non-OK Reply, its message saying why).
type BlobOfferResponse struct {
	_ struct{} `cbor:",toarray"`
	// Missing are the CIDs of the chunks the manifest lists that the node
	// lacks, each once, in manifest order.
	Missing [][]byte
	// Holders, for Replicate, is how many of the blob's r closest nodes
	// hold it whole after the placement, by the node's count (itself
	// included); the sender checks each itself.
	Holders uint16
	// Placing, for Replicate, says the placement goes on after this
	// answer: offer again to wait for it.
	Placing bool
}

// Validate bounds a decoded BlobOfferResponse.
func (r *BlobOfferResponse) Validate() error {
	if len(r.Missing) > blob.MaxChunks {
		return fmt.Errorf("blob offer response with %d missing chunks (max %d): %w", len(r.Missing), blob.MaxChunks, ErrMalformed)
	}
	return validateBlobKeys("missing chunk", r.Missing...)
}

// ChunkPut stores one chunk of a blob the receiver accepted an offer of:
// the blob's key (manifest CID), the chunk's CID and its bytes.
type ChunkPut struct {
	_     struct{} `cbor:",toarray"`
	Blob  []byte
	Chunk []byte
	Data  []byte
}

// Validate bounds a decoded ChunkPut.
func (p *ChunkPut) Validate() error {
	if len(p.Data) > blob.ChunkSize {
		return fmt.Errorf("chunk put of %d bytes (max %d): %w", len(p.Data), blob.ChunkSize, ErrMalformed)
	}
	return validateBlobKeys("chunk put key", p.Blob, p.Chunk)
}

// ChunkPutResponse acknowledges a stored chunk.
type ChunkPutResponse struct {
	_        struct{} `cbor:",toarray"`
	Complete bool     // the node now holds every chunk of the blob
}

// Validate bounds a decoded ChunkPutResponse (nothing to bound).
func (r *ChunkPutResponse) Validate() error { return nil }

// ManifestGet asks for a held blob's statement and manifest by its key.
type ManifestGet struct {
	_    struct{} `cbor:",toarray"`
	Blob []byte
}

// Validate bounds a decoded ManifestGet.
func (g *ManifestGet) Validate() error { return validateBlobKeys("manifest get key", g.Blob) }

// ManifestGetResponse returns a blob's signed statement and manifest
// (StatusNotFound when the node does not hold it).
type ManifestGetResponse struct {
	_         struct{} `cbor:",toarray"`
	Statement []byte   // blob.SignedStatement, encoded
	Manifest  []byte   // blob.Manifest, encoded
}

// Validate bounds a decoded ManifestGetResponse.
func (r *ManifestGetResponse) Validate() error {
	switch {
	case len(r.Statement) == 0 || len(r.Statement) > blob.MaxStatementSize:
		return fmt.Errorf("manifest response statement of %d bytes (want 1..%d): %w", len(r.Statement), blob.MaxStatementSize, ErrMalformed)
	case len(r.Manifest) == 0 || len(r.Manifest) > blob.MaxManifestSize:
		return fmt.Errorf("manifest response manifest of %d bytes (want 1..%d): %w", len(r.Manifest), blob.MaxManifestSize, ErrMalformed)
	}
	return nil
}

// ChunkGet asks for a chunk's bytes by its CID.
type ChunkGet struct {
	_     struct{} `cbor:",toarray"`
	Chunk []byte
}

// Validate bounds a decoded ChunkGet.
func (g *ChunkGet) Validate() error { return validateBlobKeys("chunk get key", g.Chunk) }

// ChunkGetResponse returns the bytes a node holds for a chunk, unverified
// (StatusNotFound when it holds none): the receiver checks them against
// the CID it asked for.
type ChunkGetResponse struct {
	_    struct{} `cbor:",toarray"`
	Data []byte
}

// Validate bounds a decoded ChunkGetResponse.
func (r *ChunkGetResponse) Validate() error {
	if len(r.Data) > blob.ChunkSize {
		return fmt.Errorf("chunk of %d bytes (max %d): %w", len(r.Data), blob.ChunkSize, ErrMalformed)
	}
	return nil
}

// validateBlobKeys checks that each key is 1..MaxBlobKeyLen bytes. The
// receiver parses it as the CID it expects.
func validateBlobKeys(what string, keys ...[]byte) error {
	for _, k := range keys {
		if len(k) == 0 || len(k) > MaxBlobKeyLen {
			return fmt.Errorf("%s of %d bytes (want 1..%d): %w", what, len(k), MaxBlobKeyLen, ErrMalformed)
		}
	}
	return nil
}
