package job

import (
	"bytes"
	"testing"

	"github.com/up-pool/up/codec"
)

func fuzzSeeds(tb testing.TB) [][]byte {
	key := testKey(1)
	full := mustSign(tb, testSpec(), key).Encode()
	minimal := testSpec()
	minimal.Args, minimal.Inputs, minimal.Resources = nil, nil, nil
	small := mustSign(tb, minimal, key).Encode()
	lived := testSpec()
	lived.Lifetime = MaxLifetimeMS
	long := mustSign(tb, lived, key).Encode()
	v1 := testSpec()
	v1.Version = specVersion1
	old := mustSign(tb, v1, key).Encode()
	v2 := mustSign(tb, testSpecVersion(specVersion2), key).Encode()
	wasm := mustSign(tb, testSpecV3(), key).Encode()
	io := mustSign(tb, testSpecV4(), key).Encode()
	seeds := [][]byte{full, small, long, old, v2, wasm, io, nil, {0x82, 0x40, 0x40}, {0xf6}}
	for _, b := range [][]byte{full, small, long, old, v2, wasm, io} {
		flipped := bytes.Clone(b)
		flipped[len(flipped)/2] ^= 0x01
		seeds = append(seeds,
			flipped,
			b[:len(b)-1],
			append(bytes.Clone(b), 0),
			append([]byte{0x9f}, append(bytes.Clone(b[1:]), 0xff)...),
		)
	}
	return seeds
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	batch, err := SignBatch(batchSpecs(3), testKey(1))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range batch {
		f.Add(s.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		signed, spec, err := Decode(b)
		if err != nil {
			if signed != nil || spec != nil {
				t.Fatal("Decode returned values with an error")
			}
			return
		}
		enc := signed.Encode()
		if !bytes.Equal(enc, b) {
			t.Fatalf("decoded input re-encodes differently:\nin  %x\nout %x", b, enc)
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("decoded spec does not validate: %v", err)
		}
		re, err := codec.Marshal(spec)
		if err != nil || !bytes.Equal(re, signed.Spec) {
			t.Fatalf("decoded spec re-encodes differently: %v", err)
		}
		c := signed.CID()
		if c != signed.CID() {
			t.Fatal("CID is not stable")
		}
		again, _, err := Decode(enc)
		if err != nil || again.CID() != c {
			t.Fatalf("second decode: %v, CID %s vs %s", err, again.CID(), c)
		}
		parsed, err := ParseKey(signed.Key())
		if err != nil || parsed != c {
			t.Fatalf("ParseKey(Key()) = %s, %v", parsed, err)
		}
	})
}

func FuzzStateDecode(f *testing.F) {
	for _, s := range []State{{}, tomb("a", 1), claimed("a", 1, 2), finished("client", 5, "result"), collected(7),
		{Phase: TempClaimed}, {Phase: 9}} {
		b, err := codec.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x86, 0x02, 0x41, 'a', 0x01, 0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x40})
	f.Fuzz(func(t *testing.T, b []byte) {
		var s State
		if err := codec.Unmarshal(b, &s); err != nil {
			return
		}
		if s.Validate() != nil {
			return
		}
		if m := Merge(s, s); !fieldsEqual(m, s) || !Equal(s, s) {
			t.Fatalf("Merge(s, s) = %+v, want %+v", m, s)
		}
		enc, err := codec.Marshal(s)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var back State
		if err := codec.Unmarshal(enc, &back); err != nil {
			t.Fatalf("decode of the re-encoding: %v", err)
		}
		if !fieldsEqual(back, s) || back.Validate() != nil {
			t.Fatalf("round trip %+v -> %+v", s, back)
		}
		if enc2, _ := codec.Marshal(back); !bytes.Equal(enc, enc2) {
			t.Fatal("re-encoding is not stable")
		}
		e := Expire(s, s.Deadline)
		if s.Phase == Claimed && e.Phase != Ready {
			t.Fatalf("claim not expired at its deadline: %+v", e)
		}
		if e.Validate() != nil || Compare(e, s) < 0 {
			t.Fatalf("Expire(%+v) = %+v: invalid or below its input", s, e)
		}
	})
}

// FuzzParseSigned: what the hand-read layouts of a signed spec take, the
// codec takes too, with the same fields, and it re-encodes to the input;
// every signed spec Sign and SignBatch write is hand-read.
func FuzzParseSigned(f *testing.F) {
	batch, err := SignBatch(batchSpecs(3), testKey(1))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range batch {
		if _, ok := parseSigned(s.Encode()); !ok {
			f.Fatal("a batch's signed spec is not hand-read")
		}
		f.Add(s.Encode())
	}
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte{0x83, 0x41, 0x01, 0x41, 0x02, 0x40}) // an empty path in the three-element layout
	f.Add([]byte{0x82, 0x58, 0x01, 0x01, 0x41, 0x02}) // a wide head: the codec's
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := parseSigned(b)
		if !ok {
			return
		}
		ref, err := decodeSignedCodec(b)
		if err != nil {
			t.Fatalf("hand-read signed spec the codec refuses: %v", err)
		}
		if !bytes.Equal(ref.Spec, s.Spec) || !bytes.Equal(ref.Sig, s.Sig) || !bytes.Equal(ref.Path, s.Path) {
			t.Fatalf("read differently:\nhand  %x %x %x\ncodec %x %x %x", s.Spec, s.Sig, s.Path, ref.Spec, ref.Sig, ref.Path)
		}
		if !bytes.Equal(s.Encode(), b) {
			t.Fatalf("hand-read signed spec re-encodes differently: %x", b)
		}
	})
}
