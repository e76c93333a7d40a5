package blob

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/sigverify"
)

// Bounds of a statement, enforced on every decode. A statement holds a
// project name (at most job.MaxNameLen), a CID, a certificate reference,
// two integers and a signature: under 300 bytes at most.
const (
	MaxStatementSize = 1 << 10 // bytes in an encoded SignedStatement
	StatementVersion = 1       // the Statement version this code reads and writes
	statementDomain  = "up/blob/v1\x00"
)

// ErrBadSignature reports a statement whose signature does not verify.
var ErrBadSignature = errors.New("blob statement signature does not verify")

// ErrWrongManifest reports a manifest that is not the one a statement
// names, or that belongs to another project.
var ErrWrongManifest = errors.New("manifest is not the one the statement names")

// ErrNotListed reports a chunk that no admitted manifest lists.
var ErrNotListed = errors.New("chunk is not listed by the blob's manifest")

// Statement is a project's word that a blob is its own and may be stored
// on its behalf: what a node checks before it accepts the blob's manifest
// and chunks, and charges to the project's quota. Like a job spec it
// carries, signed, when it was made and how long it lives, so no node
// holds a blob whose project stopped vouching for it beyond that.
type Statement struct {
	_        struct{} `cbor:",toarray"`
	Version  uint16
	Project  string // the project's name, as in its certificate
	Manifest []byte // the manifest's CID (bytes): the blob's key
	CertRef  []byte // sha256 of the project certificate's DER (job.CertRef)
	Created  int64  // creation time, Unix milliseconds on the project's clock
	Lifetime int64  // how long after Created the statement holds, ms: 1..job.MaxLifetimeMS
}

// Validate checks the statement's bounds.
func (s *Statement) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: statement: "+format, append([]any{ErrMalformed}, args...)...)
	}
	switch {
	case s.Version != StatementVersion:
		return bad("version %d, want %d", s.Version, StatementVersion)
	case !validProject(s.Project):
		return bad("project name of %d bytes", len(s.Project))
	case len(s.CertRef) != job.CertRefLen:
		return bad("certificate reference of %d bytes, want %d", len(s.CertRef), job.CertRefLen)
	case s.Created <= 0:
		return bad("creation time %d", s.Created)
	case s.Lifetime <= 0 || s.Lifetime > job.MaxLifetimeMS:
		return bad("lifetime %d ms out of 1..%d", s.Lifetime, job.MaxLifetimeMS)
	}
	if _, err := ParseManifestCID(s.Manifest); err != nil {
		return fmt.Errorf("statement: %w", err)
	}
	return nil
}

// Expires is when the statement lapses, in Unix ms on the project's
// clock: Created + Lifetime, saturating. A node judges it on its own clock
// with job.Expired, as it judges a job's expiry.
func (s *Statement) Expires() int64 {
	if s.Lifetime > 0 && s.Created > (1<<63-1)-s.Lifetime {
		return 1<<63 - 1
	}
	return s.Created + s.Lifetime
}

// SignedStatement is a statement's canonical encoding and the project's
// Ed25519 signature over it.
type SignedStatement struct {
	_         struct{} `cbor:",toarray"`
	Statement []byte
	Sig       []byte
}

func statementPayload(statement []byte) []byte {
	return append([]byte(statementDomain), statement...)
}

// SignStatement encodes a statement canonically and signs it with the
// project's key.
func SignStatement(s *Statement, key ed25519.PrivateKey) (*SignedStatement, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	b, err := codec.Marshal(s)
	if err != nil {
		return nil, err
	}
	signed := &SignedStatement{Statement: b, Sig: ed25519.Sign(key, statementPayload(b))}
	if n := len(signed.Encode()); n > MaxStatementSize {
		return nil, fmt.Errorf("%w: signed statement of %d bytes (max %d)", ErrMalformed, n, MaxStatementSize)
	}
	return signed, nil
}

// Encode is the signed statement's canonical encoding.
func (s *SignedStatement) Encode() []byte {
	b, err := codec.Marshal(s)
	if err != nil {
		panic(err) // two byte strings always encode
	}
	return b
}

// Verify checks the signature with the project's public key.
func (s *SignedStatement) Verify(pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize || !sigverify.Verify(pub, statementPayload(s.Statement), s.Sig) {
		return ErrBadSignature
	}
	return nil
}

// DecodeStatement parses an encoded signed statement and its statement,
// checking bounds and that both encodings are canonical. It does not
// verify the signature (Verify, Admit).
func DecodeStatement(b []byte) (*SignedStatement, *Statement, error) {
	if len(b) > MaxStatementSize {
		return nil, nil, fmt.Errorf("%w: statement of %d bytes (max %d)", ErrMalformed, len(b), MaxStatementSize)
	}
	var signed SignedStatement
	if err := codec.Unmarshal(b, &signed); err != nil {
		return nil, nil, fmt.Errorf("%w: signed statement: %v", ErrMalformed, err)
	}
	if len(signed.Sig) != ed25519.SignatureSize {
		return nil, nil, fmt.Errorf("%w: statement signature of %d bytes", ErrMalformed, len(signed.Sig))
	}
	var s Statement
	if err := codec.Unmarshal(signed.Statement, &s); err != nil {
		return nil, nil, fmt.Errorf("%w: statement: %v", ErrMalformed, err)
	}
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	if re, err := codec.Marshal(&s); err != nil || !bytes.Equal(re, signed.Statement) {
		return nil, nil, fmt.Errorf("%w: statement not canonically encoded", ErrMalformed)
	}
	if !bytes.Equal(signed.Encode(), b) {
		return nil, nil, fmt.Errorf("%w: signed statement not canonically encoded", ErrMalformed)
	}
	return &signed, &s, nil
}

// Admitted is a verified statement and the manifest it names: what a node
// holds to decide which chunks it accepts on the project's behalf.
type Admitted struct {
	Signed    *SignedStatement
	Statement *Statement
	Manifest  *Manifest
	Key       cid.Cid          // the manifest's CID
	listed    map[cid.Cid]bool // the manifest's chunks
}

// Admit decodes a signed statement and an encoded manifest, verifies the
// statement's signature with pub and checks that it names this manifest,
// of its own project. The caller checks the rest, as for a job spec: that
// pub is the key of a certificate of Statement.Project whose reference is
// Statement.CertRef, issued by the CA and not revoked, and that the
// statement has not expired on its own clock.
func Admit(statement, manifest []byte, pub ed25519.PublicKey) (*Admitted, error) {
	signed, s, err := DecodeStatement(statement)
	if err != nil {
		return nil, err
	}
	if err := signed.Verify(pub); err != nil {
		return nil, fmt.Errorf("admit blob of project %q: %w", s.Project, err)
	}
	m, err := DecodeManifest(manifest)
	if err != nil {
		return nil, err
	}
	key := m.CID()
	if !bytes.Equal(key.Bytes(), s.Manifest) {
		named, _ := ParseManifestCID(s.Manifest)
		return nil, fmt.Errorf("%w: statement names %s, manifest is %s", ErrWrongManifest, named, key)
	}
	if m.Project != s.Project {
		return nil, fmt.Errorf("%w: statement of project %q names a manifest of project %q",
			ErrWrongManifest, s.Project, truncate(m.Project))
	}
	cids, err := m.ChunkCIDs()
	if err != nil {
		return nil, err
	}
	listed := make(map[cid.Cid]bool, len(cids))
	for _, c := range cids {
		listed[c] = true
	}
	return &Admitted{Signed: signed, Statement: s, Manifest: m, Key: key, listed: listed}, nil
}

// Lists reports whether the admitted manifest lists the chunk c.
func (a *Admitted) Lists(c cid.Cid) bool { return a.listed[c] }

// CheckChunk is the check a node makes before it stores chunk bytes on
// the statement's behalf: the manifest lists c and data hash to it.
func (a *Admitted) CheckChunk(c cid.Cid, data []byte) error {
	if !a.Lists(c) {
		return fmt.Errorf("%w: %s in blob %s", ErrNotListed, c, a.Key)
	}
	return VerifyChunk(c, data)
}
