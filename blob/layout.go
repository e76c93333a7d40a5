package blob

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
)

// Bounds of a blob and its manifest, enforced on every decode.
//
// ChunkSize is 1 MiB. A chunk is the unit of one request, one verification
// and one retry: a lying replica wastes at most 1 MiB of transfer per lie
// before it is caught and the chunk is asked of another. One chunk and its
// envelope fit a single frame far below codec.MaxFrame (8 MiB), and
// bitswap-sized (IPFS moves raw blocks of at most 1–2 MiB), so a chunk is a
// valid IPFS raw block. A 64 MiB blob is 64 chunks: enough to keep r = 5
// replicas busy in parallel, while its manifest (64 CIDs of 36 bytes) stays
// under 4 KiB and travels beside its statement in one small message. A
// smaller chunk (IPFS's 256 KiB) would quadruple the requests and the
// manifest for no gain on links where a round trip, not bandwidth, is the
// cost of a request.
//
// MaxBlobSize is 64 MiB: a volunteer's node stores r-replicated chunks of
// every project near it, and a worker downloads each input before it runs,
// so a blob is bounded like everything else read from the network. Larger
// data sets are split into several inputs by the project.
const (
	ChunkSize       = 1 << 20                 // bytes in every chunk but a blob's last
	MaxBlobSize     = 64 << 20                // bytes in a blob
	MaxChunks       = MaxBlobSize / ChunkSize // chunks in a manifest
	MaxManifestSize = 4 << 10                 // bytes in an encoded manifest
	ManifestVersion = 1                       // the Manifest version this code reads and writes
)

// ErrMalformed reports a manifest, statement or CID that breaks the format
// or its bounds.
var ErrMalformed = fmt.Errorf("malformed blob: %w", codec.ErrMalformed)

// ErrBadChunk reports chunk bytes that do not hash to the chunk's CID.
var ErrBadChunk = errors.New("chunk does not match its CID")

// Kind says what a blob is for.
type Kind string

// The kinds of blob.
const (
	KindInput Kind = "input" // a job's input file
	KindWasm  Kind = "wasm"  // a WebAssembly application module
)

// Valid reports whether k is one of the kinds.
func (k Kind) Valid() bool { return k == KindInput || k == KindWasm }

// Manifest lists a blob's chunks in order. Its canonical encoding is what
// the blob's CID hashes; it names its project, so two projects uploading
// the same bytes have distinct manifests (each charged to its own quota)
// that share the chunks.
type Manifest struct {
	_         struct{} `cbor:",toarray"`
	Version   uint16
	Project   string   // the project's name, as in its certificate
	Kind      Kind     // KindInput or KindWasm
	Size      int64    // the blob's size, bytes
	ChunkSize int64    // bytes in every chunk but the last; always ChunkSize
	Chunks    [][]byte // the chunks' CIDs (bytes), in order
}

// chunksFor is the number of chunks of a blob of size bytes.
func chunksFor(size int64) int {
	return int((size + ChunkSize - 1) / ChunkSize)
}

// Validate checks the manifest's bounds and that its chunk count and
// chunk CIDs fit its size.
func (m *Manifest) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: manifest: "+format, append([]any{ErrMalformed}, args...)...)
	}
	switch {
	case m.Version != ManifestVersion:
		return bad("version %d, want %d", m.Version, ManifestVersion)
	case !validProject(m.Project):
		return bad("project name of %d bytes", len(m.Project))
	case !m.Kind.Valid():
		return bad("kind %q, want %q or %q", truncate(string(m.Kind)), KindInput, KindWasm)
	case m.Size < 0 || m.Size > MaxBlobSize:
		return bad("size %d bytes out of 0..%d", m.Size, MaxBlobSize)
	case m.ChunkSize != ChunkSize:
		return bad("chunk size %d bytes, want %d", m.ChunkSize, ChunkSize)
	case len(m.Chunks) != chunksFor(m.Size):
		return bad("%d chunks for %d bytes, want %d", len(m.Chunks), m.Size, chunksFor(m.Size))
	}
	for i, b := range m.Chunks {
		if _, err := ParseChunkCID(b); err != nil {
			return fmt.Errorf("manifest chunk %d: %w", i, err)
		}
	}
	return nil
}

func validProject(name string) bool {
	return name != "" && len(name) <= job.MaxNameLen && utf8.ValidString(name)
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Encode is the manifest's canonical encoding. A nil chunk list encodes
// as the empty one, so the empty blob has one encoding and one CID.
func (m *Manifest) Encode() []byte {
	if m.Chunks == nil {
		empty := *m
		empty.Chunks = [][]byte{}
		m = &empty
	}
	b, err := codec.Marshal(m)
	if err != nil {
		panic(err) // strings, integers and byte strings always encode
	}
	return b
}

// CID names the blob: CIDv1, dag-cbor, sha2-256 of Encode().
func (m *Manifest) CID() cid.Cid {
	return sumCID(cid.DagCBOR, m.Encode())
}

// Key is the blob's key in the overlay: the manifest CID's bytes.
func (m *Manifest) Key() []byte { return m.CID().Bytes() }

// ChunkLen is the length of chunk i, in bytes: ChunkSize for every chunk
// but the last, which holds the rest.
func (m *Manifest) ChunkLen(i int) int {
	if i == len(m.Chunks)-1 {
		return int(m.Size - int64(i)*ChunkSize)
	}
	return ChunkSize
}

// Offset is where chunk i starts in the blob, in bytes.
func (m *Manifest) Offset(i int) int64 { return int64(i) * ChunkSize }

// ChunkCIDs parses the manifest's chunk CIDs, in order.
func (m *Manifest) ChunkCIDs() ([]cid.Cid, error) {
	out := make([]cid.Cid, len(m.Chunks))
	for i, b := range m.Chunks {
		c, err := ParseChunkCID(b)
		if err != nil {
			return nil, fmt.Errorf("manifest chunk %d: %w", i, err)
		}
		out[i] = c
	}
	return out, nil
}

// DecodeManifest parses an encoded manifest, checking its bounds and that
// its encoding is canonical (so one blob has one CID).
func DecodeManifest(b []byte) (*Manifest, error) {
	if len(b) > MaxManifestSize {
		return nil, fmt.Errorf("%w: manifest of %d bytes (max %d)", ErrMalformed, len(b), MaxManifestSize)
	}
	var m Manifest
	if err := codec.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrMalformed, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if !bytes.Equal(m.Encode(), b) {
		return nil, fmt.Errorf("%w: manifest not canonically encoded", ErrMalformed)
	}
	return &m, nil
}

// sumCID is the CIDv1 of data under codec, sha2-256.
func sumCID(codecType uint64, data []byte) cid.Cid {
	sum := sha256.Sum256(data)
	mh, err := multihash.Encode(sum[:], multihash.SHA2_256)
	if err != nil {
		panic(err) // a 32-byte sha2-256 digest always encodes
	}
	return cid.NewCidV1(codecType, mh)
}

// ChunkCID is the CID of a chunk's bytes: CIDv1, raw, sha2-256.
func ChunkCID(data []byte) cid.Cid { return sumCID(cid.Raw, data) }

// ParseChunkCID parses a chunk's CID bytes, checking it is a CIDv1 raw
// sha2-256 CID.
func ParseChunkCID(b []byte) (cid.Cid, error) { return parseCID(b, cid.Raw, "chunk") }

// ParseManifestCID parses a blob's key (its manifest's CID bytes),
// checking it is a CIDv1 dag-cbor sha2-256 CID.
func ParseManifestCID(b []byte) (cid.Cid, error) { return parseCID(b, cid.DagCBOR, "manifest") }

func parseCID(b []byte, codecType uint64, what string) (cid.Cid, error) {
	c, err := cid.Cast(b)
	if err != nil {
		return cid.Undef, fmt.Errorf("%w: %s CID: %v", ErrMalformed, what, err)
	}
	if err := checkPrefix(c, codecType, what); err != nil {
		return cid.Undef, err
	}
	if !bytes.Equal(c.Bytes(), b) {
		return cid.Undef, fmt.Errorf("%w: %s CID %s not canonically encoded", ErrMalformed, what, c)
	}
	return c, nil
}

// checkPrefix checks that c is a CIDv1 of codecType over a sha2-256 digest.
func checkPrefix(c cid.Cid, codecType uint64, what string) error {
	if !c.Defined() {
		return fmt.Errorf("%w: %s CID undefined", ErrMalformed, what)
	}
	p := c.Prefix()
	if c.Version() != 1 || c.Type() != codecType || p.MhType != multihash.SHA2_256 || p.MhLength != sha256.Size {
		return fmt.Errorf("%w: %s CID %s is not a CIDv1 %s sha2-256", ErrMalformed, what, c, codecName(codecType))
	}
	return nil
}

func codecName(codecType uint64) string {
	if codecType == cid.Raw {
		return "raw"
	}
	return "dag-cbor"
}

// VerifyChunk checks that data are the bytes of the chunk c: at most
// ChunkSize bytes that hash to c. It is the check a node makes before it
// stores a chunk and a client before it uses one.
func VerifyChunk(c cid.Cid, data []byte) error {
	if err := checkPrefix(c, cid.Raw, "chunk"); err != nil {
		return err
	}
	if len(data) > ChunkSize {
		return fmt.Errorf("%w: chunk %s of %d bytes (max %d)", ErrBadChunk, c, len(data), ChunkSize)
	}
	if got := ChunkCID(data); !got.Equals(c) {
		return fmt.Errorf("%w: chunk %s: %d bytes hash to %s", ErrBadChunk, c, len(data), got)
	}
	return nil
}

// Split cuts data into chunks and lists them in the manifest of a blob of
// the project and kind. The chunks are sub-slices of data, not copies.
func Split(project string, kind Kind, data []byte) (*Manifest, [][]byte, error) {
	if len(data) > MaxBlobSize {
		return nil, nil, fmt.Errorf("%w: blob of %d bytes (max %d)", ErrMalformed, len(data), MaxBlobSize)
	}
	m := &Manifest{Version: ManifestVersion, Project: project, Kind: kind, Size: int64(len(data)), ChunkSize: ChunkSize}
	var chunks [][]byte
	for off := 0; off < len(data); off += ChunkSize {
		chunk := data[off:min(off+ChunkSize, len(data))]
		chunks = append(chunks, chunk)
		m.Chunks = append(m.Chunks, ChunkCID(chunk).Bytes())
	}
	if err := m.Validate(); err != nil {
		return nil, nil, err
	}
	return m, chunks, nil
}

// SplitReader reads r to its end and splits what it read as Split does,
// one chunk at a time; it refuses a reader holding more than MaxBlobSize
// bytes, having read at most one chunk past the bound.
func SplitReader(project string, kind Kind, r io.Reader) (*Manifest, [][]byte, error) {
	var chunks [][]byte
	for {
		buf := make([]byte, ChunkSize)
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if len(chunks) == MaxChunks {
				return nil, nil, fmt.Errorf("%w: blob of more than %d bytes", ErrMalformed, MaxBlobSize)
			}
			chunks = append(chunks, buf[:n:n])
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read blob: %w", err)
		}
	}
	m := &Manifest{Version: ManifestVersion, Project: project, Kind: kind, ChunkSize: ChunkSize}
	for _, chunk := range chunks {
		m.Size += int64(len(chunk))
		m.Chunks = append(m.Chunks, ChunkCID(chunk).Bytes())
	}
	if err := m.Validate(); err != nil {
		return nil, nil, err
	}
	return m, chunks, nil
}

// Assemble joins a blob's chunks, given in the manifest's order, checking
// the manifest and then each chunk against its CID and length.
func Assemble(m *Manifest, chunks [][]byte) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	cids, err := m.ChunkCIDs()
	if err != nil {
		return nil, err
	}
	if len(chunks) != len(cids) {
		return nil, fmt.Errorf("assemble blob %s: %d chunks, manifest lists %d", m.CID(), len(chunks), len(cids))
	}
	out := make([]byte, 0, m.Size)
	for i, chunk := range chunks {
		if err := checkChunkAt(m, i, cids[i], chunk); err != nil {
			return nil, fmt.Errorf("assemble blob %s: %w", m.CID(), err)
		}
		out = append(out, chunk...)
	}
	return out, nil
}

// checkChunkAt checks that chunk is chunk i of m: its length and its CID c.
func checkChunkAt(m *Manifest, i int, c cid.Cid, chunk []byte) error {
	if len(chunk) != m.ChunkLen(i) {
		return fmt.Errorf("%w: chunk %d (%s) of %d bytes, want %d", ErrBadChunk, i, c, len(chunk), m.ChunkLen(i))
	}
	if err := VerifyChunk(c, chunk); err != nil {
		return fmt.Errorf("chunk %d: %w", i, err)
	}
	return nil
}

// VerifyBlob checks that data are the bytes of the blob m lists: its size
// and every chunk's CID (ErrBadChunk, naming the first chunk that
// differs), after checking m itself (ErrMalformed).
func VerifyBlob(m *Manifest, data []byte) error {
	if err := m.Validate(); err != nil {
		return err
	}
	cids, err := m.ChunkCIDs()
	if err != nil {
		return err
	}
	if int64(len(data)) != m.Size {
		return fmt.Errorf("%w: blob of %d bytes, manifest %s says %d", ErrBadChunk, len(data), m.CID(), m.Size)
	}
	for i, c := range cids {
		off := m.Offset(i)
		if err := checkChunkAt(m, i, c, data[off:off+int64(m.ChunkLen(i))]); err != nil {
			return fmt.Errorf("blob %s: %w", m.CID(), err)
		}
	}
	return nil
}
