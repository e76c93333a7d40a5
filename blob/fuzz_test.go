package blob

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// mutations are the seed corpus's damaged copies of a good encoding: a
// flipped bit, a byte short, a byte over, an indefinite-length head.
func mutations(b []byte) [][]byte {
	flipped := bytes.Clone(b)
	flipped[len(flipped)/2] ^= 0x01
	return [][]byte{
		flipped,
		b[:len(b)-1],
		append(bytes.Clone(b), 0),
		append(append([]byte{0x9f}, b[1:]...), 0xff),
	}
}

func manifestSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, n := range []int{0, 1, ChunkSize, 3*ChunkSize + 1} {
		m, _ := mustSplit(tb, testData(11, n))
		seeds = append(seeds, m.Encode())
	}
	wasm, _, err := Split("p", KindWasm, []byte("\x00asm"))
	if err != nil {
		tb.Fatal(err)
	}
	seeds = append(seeds, wasm.Encode())
	for _, s := range seeds[:len(seeds):len(seeds)] {
		seeds = append(seeds, mutations(s)...)
	}
	return append(seeds, nil, []byte{0x80}, []byte{0xf6})
}

func FuzzDecodeManifest(f *testing.F) {
	for _, s := range manifestSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			if m != nil {
				t.Fatal("DecodeManifest returned a manifest with an error")
			}
			return
		}
		if !bytes.Equal(m.Encode(), b) {
			t.Fatalf("decoded manifest re-encodes differently:\nin  %x\nout %x", b, m.Encode())
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decoded manifest does not validate: %v", err)
		}
		cids, err := m.ChunkCIDs()
		if err != nil || len(cids) != len(m.Chunks) {
			t.Fatalf("ChunkCIDs: %v", err)
		}
		var total int64
		for i := range cids {
			if l := m.ChunkLen(i); l <= 0 || l > ChunkSize {
				t.Fatalf("chunk %d of %d bytes", i, l)
			}
			total += int64(m.ChunkLen(i))
		}
		if total != m.Size {
			t.Fatalf("chunk lengths add to %d, size %d", total, m.Size)
		}
		if parsed, err := ParseManifestCID(m.Key()); err != nil || parsed != m.CID() {
			t.Fatalf("ParseManifestCID(Key()) = %s, %v", parsed, err)
		}
	})
}

func FuzzDecodeStatement(f *testing.F) {
	key := testKey(1)
	var seeds [][]byte
	for _, n := range []int{0, 5} {
		m, _ := mustSplit(f, testData(12, n))
		seeds = append(seeds, mustSignStatement(f, testStatement(m), key).Encode())
	}
	for _, s := range seeds[:len(seeds):len(seeds)] {
		seeds = append(seeds, mutations(s)...)
	}
	for _, s := range append(seeds, nil, []byte{0x82, 0x40, 0x40}, []byte{0xf6}) {
		f.Add(s)
	}
	pub := key.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, b []byte) {
		signed, s, err := DecodeStatement(b)
		if err != nil {
			if signed != nil || s != nil {
				t.Fatal("DecodeStatement returned values with an error")
			}
			return
		}
		if !bytes.Equal(signed.Encode(), b) {
			t.Fatalf("decoded statement re-encodes differently")
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded statement does not validate: %v", err)
		}
		if s.Expires() < s.Created {
			t.Fatalf("Expires %d before Created %d", s.Expires(), s.Created)
		}
		// A verified statement is one the test key signed: re-signing what
		// was decoded must give the same signature (Ed25519 is deterministic).
		if signed.Verify(pub) == nil {
			again := mustSignStatement(t, s, key)
			if !bytes.Equal(again.Sig, signed.Sig) {
				t.Fatal("a verifying signature differs from the key's own")
			}
		}
	})
}

// FuzzAdmit feeds Admit a statement and a manifest: whatever it admits
// names that manifest, of its project, and lists exactly its chunks.
func FuzzAdmit(f *testing.F) {
	key := testKey(1)
	m, _ := mustSplit(f, testData(13, ChunkSize+3))
	good := mustSignStatement(f, testStatement(m), key).Encode()
	f.Add(good, m.Encode())
	for _, s := range mutations(good) {
		f.Add(s, m.Encode())
	}
	for _, mm := range mutations(m.Encode()) {
		f.Add(good, mm)
	}
	pub := key.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, statement, manifest []byte) {
		a, err := Admit(statement, manifest, pub)
		if err != nil {
			if a != nil {
				t.Fatal("Admit returned a value with an error")
			}
			return
		}
		if !bytes.Equal(a.Manifest.Encode(), manifest) || !bytes.Equal(a.Key.Bytes(), a.Statement.Manifest) {
			t.Fatal("admitted manifest is not the one given or named")
		}
		if a.Manifest.Project != a.Statement.Project {
			t.Fatal("admitted a manifest of another project")
		}
		cids, _ := a.Manifest.ChunkCIDs()
		for _, c := range cids {
			if !a.Lists(c) {
				t.Fatalf("chunk %s of the manifest not listed", c)
			}
		}
	})
}

// FuzzParseCID checks the two CID parsers: what either accepts is a
// canonical CIDv1 sha2-256 of its codec, and no bytes parse as both.
func FuzzParseCID(f *testing.F) {
	f.Add(ChunkCID([]byte("x")).Bytes())
	m, _ := mustSplit(f, nil)
	f.Add(m.Key())
	f.Add(cidOf(f, 0, 0, multihash.SHA2_256, []byte("x")))
	f.Add(cidOf(f, 1, cid.Raw, multihash.IDENTITY, []byte("x")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		chunk, errChunk := ParseChunkCID(b)
		manifest, errManifest := ParseManifestCID(b)
		if errChunk == nil && errManifest == nil {
			t.Fatal("bytes parse as a chunk CID and a manifest CID")
		}
		for _, c := range []cid.Cid{chunk, manifest} {
			if c.Defined() && (!bytes.Equal(c.Bytes(), b) || c.Version() != 1 || c.Prefix().MhType != multihash.SHA2_256) {
				t.Fatalf("parsed %s from %x", c, b)
			}
		}
	})
}

// FuzzSplit checks the layout's property on arbitrary bytes, with a chunk
// altered where the fuzzer says.
func FuzzSplit(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add([]byte("hello"), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, at uint16) {
		m, chunks, err := Split("p", KindInput, data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Assemble(m, chunks)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Assemble: %v", err)
		}
		if len(data) == 0 {
			return
		}
		altered := bytes.Clone(data)
		altered[int(at)%len(altered)] ^= 0x80
		if VerifyBlob(m, altered) == nil {
			t.Fatal("an altered blob verifies")
		}
	})
}
