package blob

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
)

// testData is n seeded pseudo-random bytes: the same seed and n give the
// same bytes.
func testData(seed uint64, n int) []byte {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
		key[8+i] = byte(uint64(n) >> (8 * i))
	}
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

func mustSplit(t testing.TB, data []byte) (*Manifest, [][]byte) {
	t.Helper()
	m, chunks, err := Split("lhc", KindInput, data)
	if err != nil {
		t.Fatalf("Split of %d bytes: %v", len(data), err)
	}
	return m, chunks
}

// splitSizes are the sizes around every boundary the layout has.
var splitSizes = []int{
	0, 1, 2, ChunkSize - 1, ChunkSize, ChunkSize + 1,
	2*ChunkSize - 1, 2 * ChunkSize, 2*ChunkSize + 1, 5 * ChunkSize / 2,
	MaxBlobSize - 1, MaxBlobSize,
}

// TestSplitAssembleRoundTrip is the layout's property: whatever the size,
// Split then Assemble gives back the bytes, every chunk but the last is
// ChunkSize, every chunk verifies against its CID, and SplitReader agrees
// with Split (even reading a byte at a time).
func TestSplitAssembleRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 1))
	sizes := append([]int(nil), splitSizes...)
	for range 12 {
		sizes = append(sizes, rng.IntN(8*ChunkSize))
	}
	for _, n := range sizes {
		data := testData(uint64(n), n)
		m, chunks := mustSplit(t, data)
		if m.Size != int64(n) || len(chunks) != chunksFor(int64(n)) || len(m.Chunks) != len(chunks) {
			t.Fatalf("size %d: manifest size %d, %d chunks, %d CIDs", n, m.Size, len(chunks), len(m.Chunks))
		}
		cids, err := m.ChunkCIDs()
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range chunks {
			if len(c) != m.ChunkLen(i) || (i < len(chunks)-1 && len(c) != ChunkSize) {
				t.Fatalf("size %d: chunk %d of %d bytes, ChunkLen %d", n, i, len(c), m.ChunkLen(i))
			}
			if err := VerifyChunk(cids[i], c); err != nil {
				t.Fatalf("size %d: chunk %d: %v", n, i, err)
			}
		}
		got, err := Assemble(m, chunks)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: Assemble: %v (equal %v)", n, err, bytes.Equal(got, data))
		}
		if err := VerifyBlob(m, data); err != nil {
			t.Fatalf("size %d: VerifyBlob: %v", n, err)
		}
		decoded, err := DecodeManifest(m.Encode())
		if err != nil || decoded.CID() != m.CID() {
			t.Fatalf("size %d: DecodeManifest: %v", n, err)
		}
		if n > 3*ChunkSize {
			continue // a byte at a time is slow; the small sizes cover it
		}
		rm, _, err := SplitReader("lhc", KindInput, iotest.OneByteReader(bytes.NewReader(data)))
		if err != nil || rm.CID() != m.CID() {
			t.Fatalf("size %d: SplitReader: %v, CID %v vs %v", n, err, rm, m.CID())
		}
	}
}

func TestSplitRefusesTooLarge(t *testing.T) {
	big := make([]byte, MaxBlobSize+1)
	if _, _, err := Split("lhc", KindInput, big); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Split of %d bytes: %v, want ErrMalformed", len(big), err)
	}
	if _, _, err := SplitReader("lhc", KindInput, bytes.NewReader(big)); !errors.Is(err, codec.ErrMalformed) {
		t.Fatalf("SplitReader of %d bytes: %v, want codec.ErrMalformed", len(big), err)
	}
	if _, _, err := Split("", KindInput, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Split without a project: %v", err)
	}
	if _, _, err := Split("lhc", "exe", nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Split of kind exe: %v", err)
	}
	failing := iotest.ErrReader(errors.New("disk gone"))
	if _, _, err := SplitReader("lhc", KindWasm, failing); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("SplitReader of a failing reader: %v", err)
	}
}

func TestEmptyBlobHasOneEncoding(t *testing.T) {
	m, chunks := mustSplit(t, nil)
	if len(chunks) != 0 || m.Size != 0 {
		t.Fatalf("empty blob: %d chunks, size %d", len(chunks), m.Size)
	}
	withEmpty := *m
	withEmpty.Chunks = [][]byte{}
	if !bytes.Equal(withEmpty.Encode(), m.Encode()) {
		t.Fatal("nil and empty chunk lists encode differently")
	}
	null, err := codec.Marshal(m) // the null encoding Encode avoids
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(null, m.Encode()) {
		t.Skip("the codec encodes a nil list as empty: nothing to refuse")
	}
	if _, err := DecodeManifest(null); !errors.Is(err, ErrMalformed) {
		t.Fatalf("manifest with a null chunk list decoded: %v", err)
	}
}

// TestAlteredChunkFails is the negative control: one flipped bit, one
// byte too few or too many, or another chunk's bytes fail verification.
func TestAlteredChunkFails(t *testing.T) {
	data := testData(3, 2*ChunkSize+100)
	m, chunks := mustSplit(t, data)
	cids, _ := m.ChunkCIDs()
	flipped := bytes.Clone(chunks[1])
	flipped[12345] ^= 0x10
	for name, bad := range map[string][]byte{
		"flipped bit":  flipped,
		"short":        chunks[1][:ChunkSize-1],
		"long":         append(bytes.Clone(chunks[1]), 0),
		"other chunk":  chunks[0],
		"empty":        nil,
		"over a chunk": make([]byte, ChunkSize+1),
	} {
		if err := VerifyChunk(cids[1], bad); !errors.Is(err, ErrBadChunk) {
			t.Errorf("%s: VerifyChunk = %v, want ErrBadChunk", name, err)
		}
		altered := slicesWith(chunks, 1, bad)
		if _, err := Assemble(m, altered); !errors.Is(err, ErrBadChunk) {
			t.Errorf("%s: Assemble = %v, want ErrBadChunk", name, err)
		}
	}
	blob := bytes.Clone(data)
	blob[len(blob)-1] ^= 1
	if err := VerifyBlob(m, blob); !errors.Is(err, ErrBadChunk) || !strings.Contains(err.Error(), "chunk 2") {
		t.Errorf("VerifyBlob of an altered last byte = %v, want ErrBadChunk naming chunk 2", err)
	}
	if err := VerifyBlob(m, data[:len(data)-1]); !errors.Is(err, ErrBadChunk) {
		t.Errorf("VerifyBlob of a short blob = %v", err)
	}
	if _, err := Assemble(m, chunks[:2]); err == nil {
		t.Error("Assemble with a chunk missing succeeded")
	}
	manifestCID := m.CID()
	if err := VerifyChunk(manifestCID, m.Encode()); !errors.Is(err, ErrMalformed) {
		t.Errorf("VerifyChunk with a dag-cbor CID = %v, want ErrMalformed", err)
	}
	if err := VerifyChunk(cid.Undef, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("VerifyChunk with an undefined CID = %v, want ErrMalformed", err)
	}
}

func slicesWith(chunks [][]byte, i int, c []byte) [][]byte {
	out := append([][]byte(nil), chunks...)
	out[i] = c
	return out
}

// cidOf builds a CID of any shape, for the refusals.
func cidOf(t testing.TB, version, codecType, mhType uint64, data []byte) []byte {
	t.Helper()
	mh, err := multihash.Sum(data, mhType, -1)
	if err != nil {
		t.Fatal(err)
	}
	if version == 0 {
		return cid.NewCidV0(mh).Bytes()
	}
	return cid.NewCidV1(codecType, mh).Bytes()
}

func TestParseCIDs(t *testing.T) {
	good := ChunkCID([]byte("x")).Bytes()
	cases := []struct {
		name         string
		b            []byte
		chunk, mfest bool
	}{
		{"chunk", good, true, false},
		{"manifest", cidOf(t, 1, cid.DagCBOR, multihash.SHA2_256, []byte("m")), false, true},
		{"v0", cidOf(t, 0, 0, multihash.SHA2_256, []byte("x")), false, false},
		{"sha512", cidOf(t, 1, cid.Raw, multihash.SHA2_512, []byte("x")), false, false},
		{"identity", cidOf(t, 1, cid.Raw, multihash.IDENTITY, []byte("x")), false, false},
		{"dag-pb", cidOf(t, 1, cid.DagProtobuf, multihash.SHA2_256, []byte("x")), false, false},
		{"truncated", good[:len(good)-1], false, false},
		{"trailing", append(bytes.Clone(good), 0), false, false},
		{"empty", nil, false, false},
		{"non-minimal varint", append([]byte{0x81, 0x00}, good[1:]...), false, false},
	}
	for _, tc := range cases {
		if _, err := ParseChunkCID(tc.b); (err == nil) != tc.chunk || (err != nil && !errors.Is(err, ErrMalformed)) {
			t.Errorf("%s: ParseChunkCID = %v, want ok %v", tc.name, err, tc.chunk)
		}
		if _, err := ParseManifestCID(tc.b); (err == nil) != tc.mfest || (err != nil && !errors.Is(err, ErrMalformed)) {
			t.Errorf("%s: ParseManifestCID = %v, want ok %v", tc.name, err, tc.mfest)
		}
	}
}

// manifestCases are manifest changes just inside (ok) and just outside
// each bound; the base is a 2.5-chunk blob of project "lhc".
var manifestCases = []struct {
	name   string
	mutate func(t testing.TB, m *Manifest)
	ok     bool
}{
	{"base", func(testing.TB, *Manifest) {}, true},
	{"version 0", func(_ testing.TB, m *Manifest) { m.Version = 0 }, false},
	{"version 2", func(_ testing.TB, m *Manifest) { m.Version = ManifestVersion + 1 }, false},
	{"project empty", func(_ testing.TB, m *Manifest) { m.Project = "" }, false},
	{"project max", func(_ testing.TB, m *Manifest) { m.Project = strings.Repeat("p", job.MaxNameLen) }, true},
	{"project max+1", func(_ testing.TB, m *Manifest) { m.Project = strings.Repeat("p", job.MaxNameLen+1) }, false},
	{"project bad utf-8", func(_ testing.TB, m *Manifest) { m.Project = "p\xff" }, false},
	{"kind wasm", func(_ testing.TB, m *Manifest) { m.Kind = KindWasm }, true},
	{"kind empty", func(_ testing.TB, m *Manifest) { m.Kind = "" }, false},
	{"kind other", func(_ testing.TB, m *Manifest) { m.Kind = "exe" }, false},
	{"kind upper", func(_ testing.TB, m *Manifest) { m.Kind = "INPUT" }, false},
	{"size negative", func(_ testing.TB, m *Manifest) { m.Size = -1 }, false},
	{"size in last chunk", func(_ testing.TB, m *Manifest) { m.Size = 3 * ChunkSize }, true},
	{"size one chunk more", func(_ testing.TB, m *Manifest) { m.Size = 3*ChunkSize + 1 }, false},
	{"size one chunk less", func(_ testing.TB, m *Manifest) { m.Size = 2 * ChunkSize }, false},
	{"max size", func(t testing.TB, m *Manifest) { withChunks(t, m, MaxChunks, MaxBlobSize) }, true},
	{"max size+1", func(t testing.TB, m *Manifest) { withChunks(t, m, MaxChunks+1, MaxBlobSize+1) }, false},
	{"chunk size 0", func(_ testing.TB, m *Manifest) { m.ChunkSize = 0 }, false},
	{"chunk size -1", func(_ testing.TB, m *Manifest) { m.ChunkSize = ChunkSize - 1 }, false},
	{"chunk size doubled", func(_ testing.TB, m *Manifest) { m.ChunkSize = 2 * ChunkSize }, false},
	{"chunks missing", func(_ testing.TB, m *Manifest) { m.Chunks = nil }, false},
	{"chunk bad", func(_ testing.TB, m *Manifest) { m.Chunks[1] = m.Chunks[1][:20] }, false},
	{"chunk null", func(_ testing.TB, m *Manifest) { m.Chunks[2] = nil }, false},
	{"chunk dag-cbor", func(t testing.TB, m *Manifest) {
		m.Chunks[0] = cidOf(t, 1, cid.DagCBOR, multihash.SHA2_256, []byte("x"))
	}, false},
	{"chunk v0", func(t testing.TB, m *Manifest) { m.Chunks[0] = cidOf(t, 0, 0, multihash.SHA2_256, []byte("x")) }, false},
	{"chunk repeated", func(_ testing.TB, m *Manifest) { m.Chunks[1] = m.Chunks[0] }, true},
}

// withChunks gives m n copies of its first chunk CID and size bytes.
func withChunks(_ testing.TB, m *Manifest, n int, size int64) {
	m.Size = size
	m.Chunks = make([][]byte, n)
	for i := range m.Chunks {
		m.Chunks[i] = ChunkCID([]byte{byte(i)}).Bytes()
	}
}

func TestManifestBounds(t *testing.T) {
	for _, tc := range manifestCases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := mustSplit(t, testData(7, 5*ChunkSize/2))
			tc.mutate(t, m)
			err := m.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("Validate = %v, does not wrap codec.ErrMalformed", err)
			}
			b, err := codec.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeManifest(b)
			if tc.ok && err != nil {
				t.Fatalf("DecodeManifest of a valid manifest: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeManifest = %v, want ErrMalformed", err)
			}
			if tc.ok && len(b) > MaxManifestSize {
				t.Fatalf("valid manifest of %d bytes exceeds MaxManifestSize %d", len(b), MaxManifestSize)
			}
		})
	}
}

func TestDecodeManifestRefusesNonCanonical(t *testing.T) {
	m, _ := mustSplit(t, testData(8, ChunkSize+5))
	b := m.Encode()
	cases := map[string][]byte{
		"trailing byte":    append(bytes.Clone(b), 0),
		"indefinite array": append(append([]byte{0x9f}, b[1:]...), 0xff),
		"empty":            nil,
		"truncated":        b[:len(b)-1],
		"null":             {0xf6},
		"oversized":        make([]byte, MaxManifestSize+1),
	}
	// A 16-bit version where an 8-bit head suffices is not canonical.
	cases["wide version"] = append([]byte{b[0], 0x19, 0x00, 0x01}, b[2:]...)
	for name, bad := range cases {
		if _, err := DecodeManifest(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: DecodeManifest = %v, want ErrMalformed", name, err)
		}
	}
	if _, err := DecodeManifest(b); err != nil {
		t.Fatalf("the canonical encoding: %v", err)
	}
}

// TestLargestManifestFits checks MaxManifestSize against the largest
// manifest the bounds allow.
func TestLargestManifestFits(t *testing.T) {
	m := &Manifest{Version: ManifestVersion, Project: strings.Repeat("p", job.MaxNameLen), Kind: KindInput, ChunkSize: ChunkSize}
	withChunks(t, m, MaxChunks, MaxBlobSize)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Encode()); n > MaxManifestSize || n < MaxManifestSize/2 {
		t.Fatalf("largest manifest is %d bytes; MaxManifestSize %d is too tight or too loose", n, MaxManifestSize)
	} else {
		t.Logf("largest manifest: %d bytes (bound %d)", n, MaxManifestSize)
	}
}

func TestManifestCIDDistinctFromChunks(t *testing.T) {
	m, chunks := mustSplit(t, testData(9, 10))
	c := m.CID()
	if c.Type() != cid.DagCBOR || c.Version() != 1 {
		t.Fatalf("manifest CID %s: codec %x version %d", c, c.Type(), c.Version())
	}
	if ChunkCID(chunks[0]).Type() != cid.Raw {
		t.Fatal("chunk CID is not raw")
	}
	if parsed, err := ParseManifestCID(m.Key()); err != nil || parsed != c {
		t.Fatalf("ParseManifestCID(Key()) = %s, %v", parsed, err)
	}
	other, _ := mustSplit(t, testData(9, 10))
	other.Kind = KindWasm
	if other.CID() == c {
		t.Fatal("kind does not change the CID")
	}
	other.Kind, other.Project = KindInput, "other"
	if other.CID() == c {
		t.Fatal("project does not change the CID")
	}
}

// TestInvalidManifestRefusedNotPanicking: a manifest whose chunk count
// does not fit its size is refused by Assemble and VerifyBlob, not sliced.
func TestInvalidManifestRefusedNotPanicking(t *testing.T) {
	m, chunks := mustSplit(t, testData(10, 2*ChunkSize+1))
	m.Size = 10
	if _, err := Assemble(m, chunks); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Assemble = %v, want ErrMalformed", err)
	}
	if err := VerifyBlob(m, make([]byte, 10)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("VerifyBlob = %v, want ErrMalformed", err)
	}
}
