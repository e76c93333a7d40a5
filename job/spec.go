package job

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/sigverify"
)

// SpecVersion is the newest version of Spec this code reads and writes.
// It also reads version 1 specs, which carry no lifetime (lifetime.go),
// version 2 specs, which carry no WebAssembly module and no blob input,
// version 3 specs, which carry no standard input and no output files
// (layout.go), version 4 specs, which ask for no commit–reveal, and
// version 5 specs, which are no sequence (sequence.go). A project writes the least version a spec needs
// (LeastVersion), so a spec without the newer fields keeps the version 3
// bytes older nodes read.
const SpecVersion = specVersion6

// WriteVersion is the version a new spec is written in unless its fields
// need a later one (LeastVersion): version 3's bytes, which nodes of the
// previous release read.
const WriteVersion = specVersion3

// The versions: 1 before job lifetimes, 2 before WebAssembly modules and
// blob inputs, 3 with them, 4 with standard input and output files, 5
// with commit–reveal (Commit, RevealWait), 6 with sequences (Steps).
const (
	specVersion1 = 1
	specVersion2 = 2
	specVersion3 = 3
	specVersion4 = 4
	specVersion5 = 5
	specVersion6 = 6
)

// Bounds of a spec's commit–reveal.
const (
	MaxCommit = 16 // commitments a client may be asked to wait for
)

// Bounds of a spec's output files.
const (
	MaxOutputs       = 16 // names in Outputs
	MaxOutputNameLen = 64 // bytes of one name
)

// Bounds of a spec, enforced on every decode.
const (
	MaxSignedSize  = 64 << 10 // encoded Signed, in bytes
	MaxNameLen     = 64       // Project
	MaxAppLen      = 128      // App
	MaxArgs        = 64
	MaxArgLen      = 1024
	MaxInputs      = 64
	MaxURLLen      = 2048
	MaxKeywords    = 32
	MaxKeywordLen  = 128
	MaxResources   = 16
	NonceLen       = 16
	CertRefLen     = sha256.Size
	ResultKeyLen   = 32
	signDomain     = "up/job/v1\x00"
	signatureBytes = ed25519.SignatureSize
)

// ErrMalformed reports a spec or state that breaks the format or its bounds.
var ErrMalformed = fmt.Errorf("malformed job: %w", codec.ErrMalformed)

// ErrBadSignature reports a spec whose signature does not verify.
var ErrBadSignature = errors.New("job signature does not verify")

// Input is a reference to an input file: either a URL to fetch it from and
// the SHA-256 its bytes must have, or (version 3 on) a blob in the overlay,
// named by its manifest's CID, whose chunks' CIDs name its bytes.
type Input struct {
	_      struct{} `cbor:",toarray"`
	URL    string   // "" for a blob input
	SHA256 []byte   // 32 bytes for a URL input; none for a blob input
	Size   int64    // bytes; 0 = unknown
	// Blob is the input blob's key, its manifest CID's bytes (CIDv1
	// dag-cbor sha2-256, see package blob); nil for a URL input.
	// Version 3 on.
	Blob []byte
}

// Spec is what a project asks a client to run. It is signed by the
// project's key and never changes once signed.
type Spec struct {
	_       struct{} `cbor:",toarray"`
	Version uint16
	Project string // the project's name, as in its certificate
	// App is the application: a name from the volunteer's allow-list,
	// or, when Module is set, the module's display name only.
	App       string
	Args      []string // arguments to the application
	Inputs    []Input
	Keywords  []string // index keywords, e.g. "LHC", "LHC:mem:<128MB"
	Resources []string // resource classes, e.g. "mem:<128MB", "bw:cable"
	TFinish   int64    // milliseconds a claim may last before the job is ready again
	Created   int64    // creation time, Unix milliseconds
	Nonce     []byte   // NonceLen random bytes: redundant copies land apart
	CertRef   []byte   // sha256 of the project certificate's DER
	ResultKey []byte   // the project's X25519 public key: results are sealed to it
	// Lifetime is how long after Created the job lives, in ms; 0 takes
	// DefaultLifetimeMS. Version 2 on; version 1 specs have none.
	Lifetime int64
	// Module, when set, is the application as a WebAssembly module (WASI
	// preview 1) shipped by the project as a blob: its key, the manifest
	// CID's bytes (CIDv1 dag-cbor sha2-256). A client runs it in its
	// sandbox if the volunteer allows the project's modules, whatever App
	// says. Version 3 on.
	Module []byte
	// Stdin, when not 0, makes input Stdin − 1 (its whole bytes) the
	// application's standard input; 0: none. Version 4 on.
	Stdin uint16
	// Outputs names files of the work directory the application writes
	// that the result carries beside its standard output, in this order
	// (PackOutputs): plain names (ValidOutputName), at most MaxOutputs.
	// Version 4 on.
	Outputs []string
	// Commit, when not 0, asks a client to commit to its result before it
	// reveals it (commit–reveal, docs/design.md): it sends a signed
	// commitment to the unit's board (BoardKey) and submits the sealed
	// result only once Commit commitments of the unit's copies are there,
	// or RevealWait has passed. Version 5 on.
	Commit uint16
	// RevealWait is how long, in ms, a client waits at most for the
	// unit's commitments, from its own commitment, on its own clock; 0
	// takes DefaultRevealWaitMS. Version 5 on.
	RevealWait int64
	// Steps, when not 0, makes the job a sequence of that many steps run
	// in order by one client, each from the previous step's checkpoint;
	// T_finish is then the deadline of each step, renewed by each
	// checkpoint on each replica's own clock (sequence.go). Version 6 on.
	Steps uint16
}

// DefaultRevealWaitMS is the reveal wait, in ms, of a spec that asks for
// commit–reveal and names none: 10 minutes.
const DefaultRevealWaitMS = 10 * 60 * 1000

// UsesCommit reports whether the spec asks for commit–reveal: version 5 on.
func (s *Spec) UsesCommit() bool { return s.Commit != 0 || s.RevealWait != 0 }

// RevealWaitMS is the longest a client waits for the unit's commitments
// before it reveals, in ms (DefaultRevealWaitMS when the spec names none).
func (s *Spec) RevealWaitMS() int64 {
	if s.RevealWait == 0 {
		return DefaultRevealWaitMS
	}
	return s.RevealWait
}

// UsesIO reports whether the spec gives standard input or asks for output
// files: version 4 on.
func (s *Spec) UsesIO() bool { return s.Stdin != 0 || len(s.Outputs) > 0 }

// LeastVersion is the least version whose layout holds the spec's fields
// (at least 3, the version this code wrote before version 4).
func (s *Spec) LeastVersion() uint16 {
	if s.IsSequence() {
		return specVersion6
	}
	if s.UsesCommit() {
		return specVersion5
	}
	if s.UsesIO() {
		return specVersion4
	}
	return specVersion3
}

// ValidOutputName checks an output file's name: 1..MaxOutputNameLen bytes
// of letters, digits, '.', '_' and '-', not "." or "..", so it names a
// file directly in the work directory on every platform.
func ValidOutputName(name string) error {
	if name == "" || len(name) > MaxOutputNameLen || name == "." || name == ".." {
		return fmt.Errorf("%w: output file name %q: want 1..%d bytes, not . or ..", ErrMalformed, truncate(name), MaxOutputNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w: output file name %q: only letters, digits, '.', '_' and '-'", ErrMalformed, truncate(name))
		}
	}
	return nil
}

// Validate checks the spec's bounds.
func (s *Spec) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
	switch {
	case s.Version < specVersion1 || s.Version > SpecVersion:
		return bad("version %d, want %d to %d", s.Version, specVersion1, SpecVersion)
	case s.Version == specVersion1 && s.Lifetime != 0:
		return bad("version 1 spec with a lifetime")
	case s.Version < specVersion3 && s.UsesBlobs():
		return bad("version %d spec with a WebAssembly module or a blob input (version %d on)", s.Version, specVersion3)
	case s.Version < specVersion4 && s.UsesIO():
		return bad("version %d spec with standard input or output files (version %d on)", s.Version, specVersion4)
	case s.Version < specVersion5 && s.UsesCommit():
		return bad("version %d spec with commit–reveal (version %d on)", s.Version, specVersion5)
	case s.Version < specVersion6 && s.IsSequence():
		return bad("version %d spec with steps (version %d on)", s.Version, specVersion6)
	case s.Steps > MaxSteps:
		return bad("%d steps (max %d)", s.Steps, MaxSteps)
	case s.Commit > MaxCommit || s.RevealWait < 0 || s.RevealWait > MaxLifetimeMS:
		return bad("commit %d (max %d), reveal wait %d ms (0..%d)", s.Commit, MaxCommit, s.RevealWait, MaxLifetimeMS)
	case int(s.Stdin) > len(s.Inputs):
		return bad("standard input is input %d of %d", int(s.Stdin)-1, len(s.Inputs))
	case len(s.Outputs) > MaxOutputs:
		return bad("%d output files (max %d)", len(s.Outputs), MaxOutputs)
	case s.Lifetime < 0 || s.Lifetime > MaxLifetimeMS:
		return bad("lifetime %d ms out of 0..%d", s.Lifetime, MaxLifetimeMS)
	case s.Project == "" || len(s.Project) > MaxNameLen || !utf8.ValidString(s.Project):
		return bad("project name of %d bytes", len(s.Project))
	case s.App == "" || len(s.App) > MaxAppLen || !utf8.ValidString(s.App):
		return bad("application name of %d bytes", len(s.App))
	case len(s.Args) > MaxArgs:
		return bad("%d arguments (max %d)", len(s.Args), MaxArgs)
	case len(s.Inputs) > MaxInputs:
		return bad("%d inputs (max %d)", len(s.Inputs), MaxInputs)
	case len(s.Keywords) == 0 || len(s.Keywords) > MaxKeywords:
		return bad("%d keywords (want 1..%d)", len(s.Keywords), MaxKeywords)
	case len(s.Resources) > MaxResources:
		return bad("%d resource classes (max %d)", len(s.Resources), MaxResources)
	case s.TFinish <= 0:
		return bad("T_finish %d ms is not positive", s.TFinish)
	case s.Created <= 0:
		return bad("creation time %d", s.Created)
	case len(s.Nonce) != NonceLen:
		return bad("nonce of %d bytes, want %d", len(s.Nonce), NonceLen)
	case len(s.CertRef) != CertRefLen:
		return bad("certificate reference of %d bytes, want %d", len(s.CertRef), CertRefLen)
	case len(s.ResultKey) != ResultKeyLen:
		return bad("result key of %d bytes, want %d", len(s.ResultKey), ResultKeyLen)
	}
	if len(s.Module) > 0 {
		if _, err := ParseBlobKey(s.Module); err != nil {
			return fmt.Errorf("module: %w", err)
		}
	}
	return s.validateLists()
}

// validateLists checks the spec's lists: arguments, outputs, inputs,
// keywords and resources.
func (s *Spec) validateLists() error {
	for _, a := range s.Args {
		if len(a) > MaxArgLen || !utf8.ValidString(a) {
			return fmt.Errorf("%w: argument of %d bytes (max %d, UTF-8)", ErrMalformed, len(a), MaxArgLen)
		}
	}
	seen := map[string]bool{}
	for _, o := range s.Outputs {
		if err := ValidOutputName(o); err != nil {
			return err
		}
		if seen[o] {
			return fmt.Errorf("%w: output file %q named twice", ErrMalformed, o)
		}
		seen[o] = true
	}
	for i, in := range s.Inputs {
		if err := in.validate(); err != nil {
			return fmt.Errorf("input %d: %w", i, err)
		}
	}
	for _, k := range append(append([]string(nil), s.Keywords...), s.Resources...) {
		if err := ValidateKeyword(k); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one input: exactly one of a URL (with a 32-byte SHA-256)
// and a blob key (with no SHA-256: the manifest's chunk CIDs name the
// bytes), and a size >= 0.
func (in *Input) validate() error {
	switch {
	case in.Size < 0:
		return fmt.Errorf("%w: size %d", ErrMalformed, in.Size)
	case len(in.Blob) > 0:
		if in.URL != "" || len(in.SHA256) != 0 {
			return fmt.Errorf("%w: a blob input with a URL or a sha256 (want exactly one of URL and blob)", ErrMalformed)
		}
		_, err := ParseBlobKey(in.Blob)
		return err
	case in.URL == "" || len(in.URL) > MaxURLLen || !utf8.ValidString(in.URL) || len(in.SHA256) != sha256.Size:
		return fmt.Errorf("%w: input %q: want a URL of 1..%d bytes and a 32-byte sha256, or a blob",
			ErrMalformed, truncate(in.URL), MaxURLLen)
	}
	return nil
}

// UsesBlobs reports whether the spec has a version 3 field set, a module or
// a blob input: running the job needs blobs from the overlay.
func (s *Spec) UsesBlobs() bool {
	if len(s.Module) > 0 {
		return true
	}
	for _, in := range s.Inputs {
		if len(in.Blob) > 0 {
			return true
		}
	}
	return false
}

// ValidateKeyword checks one keyword: 1..MaxKeywordLen bytes of graphic
// UTF-8 without spaces or parentheses (they separate keywords in queries).
func ValidateKeyword(k string) error {
	if k == "" || len(k) > MaxKeywordLen || !utf8.ValidString(k) {
		return fmt.Errorf("%w: keyword %q", ErrMalformed, truncate(k))
	}
	for _, r := range k {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '(' || r == ')' {
			return fmt.Errorf("%w: keyword %q holds %q", ErrMalformed, truncate(k), r)
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Signed is a signed spec: the canonical encoding of a Spec and the
// project's Ed25519 signature over it — or, with a Path, over the root of
// a submission batch the spec is a leaf of (specbatch.go). Its canonical
// encoding is what the job's CID hashes.
type Signed struct {
	_    struct{} `cbor:",toarray"`
	Spec []byte
	Sig  []byte
	Path []byte // the spec's place in a signed batch (BatchPath); empty: Sig signs the spec alone
}

// signedV1 is a signed spec without a Path, encoded as every spec was
// before batches: two elements (its CID unchanged).
type signedV1 struct {
	_    struct{} `cbor:",toarray"`
	Spec []byte
	Sig  []byte
}

// signedV1Fields is its element count (codec.ArrayLen): the layout is
// told by the count, without a failed decode of the other.
var signedV1Fields = codec.Fields(signedV1{})

// Sign encodes spec canonically and signs it with the project key.
func Sign(spec *Spec, key ed25519.PrivateKey) (*Signed, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	b, err := codec.Marshal(spec)
	if err != nil {
		return nil, err
	}
	signed := &Signed{Spec: b, Sig: ed25519.Sign(key, signPayload(b))}
	if n := len(signed.Encode()); n > MaxSignedSize {
		// Decode would refuse it: do not sign what no node accepts.
		return nil, fmt.Errorf("%w: signed spec of %d bytes (max %d)", ErrMalformed, n, MaxSignedSize)
	}
	return signed, nil
}

func signPayload(spec []byte) []byte {
	return append([]byte(signDomain), spec...)
}

// Encode is the canonical encoding of the signed spec: an array of the
// spec, the signature and, when there is one, the path (what codec.Marshal
// gives, written by hand: every node, client and project encodes signed
// specs on its hot paths).
func (s *Signed) Encode() []byte {
	return encodeSignedPair(s.Spec, s.Sig, s.Path)
}

// encodeSignedPair encodes an object and its signature as codec.Marshal
// encodes the toarray structs Signed and SignedListing: [object, sig,
// path], or [object, sig] without a path (their V1 layouts).
func encodeSignedPair(object, sig, path []byte) []byte {
	b := make([]byte, 0, len(object)+len(sig)+len(path)+16)
	if len(path) == 0 {
		b = append(b, 0x82)
	} else {
		b = append(b, 0x83)
	}
	b = codec.AppendBytes(b, object)
	b = codec.AppendBytes(b, sig)
	if len(path) > 0 {
		b = codec.AppendBytes(b, path)
	}
	return b
}

// Decode parses an encoded signed spec and its spec, checking bounds and
// that both encodings are canonical (so one job has one CID).
func Decode(b []byte) (*Signed, *Spec, error) {
	if len(b) > MaxSignedSize {
		return nil, nil, fmt.Errorf("%w: %d bytes (max %d)", ErrMalformed, len(b), MaxSignedSize)
	}
	s, canonical := parseSigned(b)
	if !canonical {
		var err error
		if s, err = decodeSignedCodec(b); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	}
	if len(s.Path) > 0 {
		if c, err := DecodeBatchPath(s.Path); err != nil {
			return nil, nil, err
		} else if c.Size > MaxPlacedBatch {
			return nil, nil, fmt.Errorf("%w: a batch of %d specs (max %d: it is one place)", ErrMalformed, c.Size, MaxPlacedBatch)
		}
	}
	if len(s.Sig) != signatureBytes {
		return nil, nil, fmt.Errorf("%w: signature of %d bytes", ErrMalformed, len(s.Sig))
	}
	var spec Spec
	if err := codec.Unmarshal(s.Spec, &spec); err != nil {
		return nil, nil, fmt.Errorf("%w: spec: %v", ErrMalformed, err)
	}
	if err := spec.Validate(); err != nil {
		return nil, nil, err
	}
	if re, err := codec.Marshal(&spec); err != nil || !bytes.Equal(re, s.Spec) {
		return nil, nil, fmt.Errorf("%w: spec not canonically encoded", ErrMalformed)
	}
	if !canonical && !bytes.Equal(s.Encode(), b) {
		return nil, nil, fmt.Errorf("%w: signed spec not canonically encoded", ErrMalformed)
	}
	return &s, &spec, nil
}

// decodeSignedCodec decodes a signed spec in either layout with the
// codec (for bytes parseSigned does not read).
func decodeSignedCodec(b []byte) (Signed, error) {
	var v1 signedV1
	if codec.ArrayLen(b) == signedV1Fields && codec.Unmarshal(b, &v1) == nil {
		return Signed{Spec: v1.Spec, Sig: v1.Sig}, nil
	}
	var s Signed
	err := codec.Unmarshal(b, &s)
	return s, err
}

// parseSigned reads a signed spec in its canonical layouts by hand —
// two byte strings, or three with a non-empty path, shortest heads (the
// codec's readers) — so Decode needs neither the codec's reflective
// decode nor a re-encoding to check its one encoding; false: another
// layout, for the codec. The fields are in one copy of b.
func parseSigned(b []byte) (Signed, bool) {
	var s Signed
	n, ok := codec.ReadByteStringArray(bytes.Clone(b), 2, &s.Spec, &s.Sig, &s.Path)
	if !ok || (n == 3 && len(s.Path) == 0) {
		return Signed{}, false
	}
	return s, true
}

// Verify checks the signature with the project's public key.
func (s *Signed) Verify(pub ed25519.PublicKey) error {
	return s.VerifyOnce(pub, nil)
}

// VerifyOnce is Verify remembering valid signatures in once (a batch's
// root signature, which each spec of the batch carries, is verified once
// per party); nil once verifies every time.
func (s *Signed) VerifyOnce(pub ed25519.PublicKey, once *sigverify.Once) error {
	msg := signPayload(s.Spec)
	if len(s.Path) > 0 {
		var err error
		if msg, err = batchSigned(specBatchDomain, msg, s.Path); err != nil {
			return fmt.Errorf("%w: %w", ErrBadSignature, err)
		}
	}
	if len(pub) != ed25519.PublicKeySize || !once.Verify(pub, msg, s.Sig) {
		return ErrBadSignature
	}
	return nil
}

// CID is the job's identifier: CIDv1, dag-cbor, sha2-256 of Encode().
func (s *Signed) CID() cid.Cid {
	mh, err := multihash.Sum(s.Encode(), multihash.SHA2_256, -1)
	if err != nil {
		panic(err)
	}
	return cid.NewCidV1(cid.DagCBOR, mh)
}

// Key is the job's key in the overlay: the CID's bytes.
func (s *Signed) Key() []byte { return s.CID().Bytes() }

// CertRef is the reference a spec carries to its project's certificate.
func CertRef(certDER []byte) []byte {
	h := sha256.Sum256(certDER)
	return h[:]
}

// ParseBlobKey parses a blob key as a spec names it (Spec.Module,
// Input.Blob): a manifest CID's bytes, a CIDv1 dag-cbor sha2-256 CID in its
// one binary form. It is blob.ParseManifestCID's check, which job cannot
// import (blob imports job).
func ParseBlobKey(b []byte) (cid.Cid, error) {
	c, err := ParseKey(b)
	if err != nil {
		return cid.Undef, fmt.Errorf("%w: blob key: %v", ErrMalformed, err)
	}
	if !bytes.Equal(c.Bytes(), b) {
		return cid.Undef, fmt.Errorf("%w: blob key %s not canonically encoded", ErrMalformed, c)
	}
	return c, nil
}

// ParseKey parses a job key (CID bytes), checking it is a CIDv1 dag-cbor
// sha2-256 CID.
func ParseKey(b []byte) (cid.Cid, error) {
	c, err := cid.Cast(b)
	if err != nil {
		return cid.Undef, fmt.Errorf("%w: job key: %v", ErrMalformed, err)
	}
	if p := c.Prefix(); c.Version() != 1 || c.Type() != cid.DagCBOR || p.MhType != multihash.SHA2_256 || p.MhLength != sha256.Size {
		return cid.Undef, fmt.Errorf("%w: job key %s is not a CIDv1 dag-cbor sha2-256", ErrMalformed, c)
	}
	return c, nil
}
