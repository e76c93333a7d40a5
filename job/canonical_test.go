package job

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/up-pool/up/codec"
)

// cborWriter hand-encodes CBOR. Every head is written in its shortest form
// except head number wide, which is written with additional information
// wideAI (24..27: 1, 2, 4 or 8 length bytes), a valid but non-canonical
// encoding of the same value.
type cborWriter struct {
	buf     []byte
	n       int // heads written so far
	wide    int
	wideAI  byte
	widened bool
}

func (w *cborWriter) head(major byte, v uint64) {
	ai := byte(0)
	switch {
	case v < 24:
		ai = byte(v)
	case v <= 0xff:
		ai = 24
	case v <= 0xffff:
		ai = 25
	case v <= 0xffffffff:
		ai = 26
	default:
		ai = 27
	}
	if w.n == w.wide && w.wideAI > ai && w.wideAI >= 24 {
		ai = w.wideAI
		w.widened = true
	}
	w.n++
	w.buf = append(w.buf, major<<5|ai)
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], v)
	switch ai {
	case 24:
		w.buf = append(w.buf, be[7:]...)
	case 25:
		w.buf = append(w.buf, be[6:]...)
	case 26:
		w.buf = append(w.buf, be[4:]...)
	case 27:
		w.buf = append(w.buf, be[:]...)
	}
}

func (w *cborWriter) int(v int64) {
	if v >= 0 {
		w.head(0, uint64(v))
	} else {
		w.head(1, uint64(-1-v))
	}
}

func (w *cborWriter) bytes(b []byte) {
	if b == nil {
		w.buf = append(w.buf, 0xf6) // null, as the codec writes nil slices
		return
	}
	w.head(2, uint64(len(b)))
	w.buf = append(w.buf, b...)
}

func (w *cborWriter) text(s string) {
	w.head(3, uint64(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *cborWriter) texts(ss []string) {
	if ss == nil {
		w.buf = append(w.buf, 0xf6)
		return
	}
	w.head(4, uint64(len(ss)))
	for _, s := range ss {
		w.text(s)
	}
}

func handSpec(s *Spec, wide int, wideAI byte) (b []byte, heads int, widened bool) {
	w := &cborWriter{wide: wide, wideAI: wideAI}
	fields := uint64(14)
	switch s.Version {
	case specVersion1:
		fields = 12
	case specVersion2:
		fields = 13
	}
	w.head(4, fields)
	w.int(int64(s.Version))
	w.text(s.Project)
	w.text(s.App)
	w.texts(s.Args)
	inputFields := uint64(3) // before version 3; Blob is the fourth
	if fields == 14 {
		inputFields = 4
	}
	w.head(4, uint64(len(s.Inputs)))
	for _, in := range s.Inputs {
		w.head(4, inputFields)
		w.text(in.URL)
		w.bytes(in.SHA256)
		w.int(in.Size)
		if fields == 14 {
			w.bytes(in.Blob)
		}
	}
	w.texts(s.Keywords)
	w.texts(s.Resources)
	w.int(s.TFinish)
	w.int(s.Created)
	w.bytes(s.Nonce)
	w.bytes(s.CertRef)
	w.bytes(s.ResultKey)
	if fields >= 13 {
		w.int(s.Lifetime)
	}
	if fields == 14 {
		w.bytes(s.Module)
	}
	return w.buf, w.n, w.widened
}

func handSigned(spec, sig []byte, wide int, wideAI byte) (b []byte, heads int, widened bool) {
	w := &cborWriter{wide: wide, wideAI: wideAI}
	w.head(4, 2)
	w.bytes(spec)
	w.bytes(sig)
	return w.buf, w.n, w.widened
}

// TestHandEncoderIsCanonical checks the hand encoder against the codec, so
// the non-canonical variants below differ from the canonical bytes only
// where they are meant to; for every version's layout.
func TestHandEncoderIsCanonical(t *testing.T) {
	for _, s := range []*Spec{testSpec(), testSpecV3(), testSpecVersion(specVersion2), testSpecVersion(specVersion1)} {
		signed := mustSign(t, s, testKey(1))
		spec, _, _ := handSpec(s, -1, 0)
		if !bytes.Equal(spec, signed.Spec) {
			t.Fatalf("version %d: hand-encoded spec\n%x\ncodec\n%x", s.Version, spec, signed.Spec)
		}
	}
	signed := mustSign(t, testSpec(), testKey(1))
	enc, _, _ := handSigned(signed.Spec, signed.Sig, -1, 0)
	if !bytes.Equal(enc, signed.Encode()) {
		t.Fatal("hand-encoded signed spec differs from Encode()")
	}
}

// TestDecodeRejectsNonCanonicalSpec widens each head of the spec encoding
// (array and string lengths, integers) in turn: the same spec, other bytes,
// validly signed. One job must have one encoding, so Decode refuses each.
func TestDecodeRejectsNonCanonicalSpec(t *testing.T) {
	for _, base := range []*Spec{testSpecV3(), testSpecVersion(specVersion2)} {
		t.Run(fmt.Sprintf("version %d", base.Version), func(t *testing.T) { rejectsNonCanonical(t, base) })
	}
}

func rejectsNonCanonical(t *testing.T, base *Spec) {
	key := testKey(1)
	pub := key.Public().(ed25519.PublicKey)
	canonical := mustSign(t, base, key)
	_, heads, _ := handSpec(base, -1, 0)
	var variants, decodable int
	for i := 0; i < heads; i++ {
		for ai := byte(24); ai <= 27; ai++ {
			spec, _, widened := handSpec(base, i, ai)
			if !widened {
				continue
			}
			variants++
			var s Spec
			if codec.Unmarshal(spec, &s) == nil {
				decodable++ // the codec reads it: only the canonical check stands
			}
			signed := &Signed{Spec: spec, Sig: ed25519.Sign(key, signPayload(spec))}
			if signed.Verify(pub) != nil {
				t.Fatal("re-signed variant does not verify")
			}
			if _, _, err := Decode(signed.Encode()); !errors.Is(err, ErrMalformed) {
				t.Errorf("head %d widened to ai %d: Decode = %v, want ErrMalformed", i, ai, err)
			} else if signed.CID() == canonical.CID() {
				t.Error("a variant has the canonical CID")
			}
		}
	}
	if variants < heads {
		t.Errorf("only %d variants for %d heads", variants, heads)
	}
	if decodable == 0 {
		t.Error("no non-canonical variant was readable by the codec; the test does not reach Decode's canonical check")
	}
	t.Logf("%d non-canonical spec encodings, %d readable by the codec, all refused", variants, decodable)
}

// TestDecodeRejectsNonCanonicalSigned widens the heads of the outer array
// and of its two byte strings.
func TestDecodeRejectsNonCanonicalSigned(t *testing.T) {
	signed := mustSign(t, testSpec(), testKey(1))
	var variants int
	for i := 0; i < 3; i++ {
		for ai := byte(24); ai <= 27; ai++ {
			enc, _, widened := handSigned(signed.Spec, signed.Sig, i, ai)
			if !widened {
				continue
			}
			variants++
			if _, _, err := Decode(enc); !errors.Is(err, ErrMalformed) {
				t.Errorf("head %d widened to ai %d: Decode = %v, want ErrMalformed", i, ai, err)
			}
		}
	}
	if variants < 3 {
		t.Errorf("only %d variants", variants)
	}
}

// TestDecodeRejectsOtherEncodings covers non-canonical forms other than
// long heads: indefinite lengths, tags, and values of another type.
func TestDecodeRejectsOtherEncodings(t *testing.T) {
	key := testKey(1)
	small := testSpec()
	small.Inputs = small.Inputs[:1]
	signed := mustSign(t, small, key)
	if len(signed.Spec) >= 256 || signed.Encode()[1] != 0x58 {
		t.Fatalf("test assumes a spec of under 256 bytes, got %d", len(signed.Spec))
	}
	resign := func(spec []byte) []byte {
		return (&Signed{Spec: spec, Sig: ed25519.Sign(key, signPayload(spec))}).Encode()
	}
	spec := signed.Spec
	if spec[0] != 0x8e {
		t.Fatalf("spec does not start with a 14-element array: %x", spec[:1])
	}
	selfDescribe := []byte{0xd9, 0xd9, 0xf7}
	// Project "lhc" as an indefinite-length text string: 7f 63 'lhc' ff.
	projAt := bytes.Index(spec, []byte("\x63lhc"))
	if projAt < 0 {
		t.Fatal("project not found in the encoding")
	}
	indefProject := append(append(append([]byte{}, spec[:projAt]...), 0x7f, 0x63, 'l', 'h', 'c', 0xff), spec[projAt+4:]...)
	cases := map[string][]byte{
		"indefinite spec array":   resign(append(append([]byte{0x9f}, spec[1:]...), 0xff)),
		"indefinite project":      resign(indefProject),
		"self-described spec":     resign(append(bytes.Clone(selfDescribe), spec...)),
		"self-described signed":   append(bytes.Clone(selfDescribe), signed.Encode()...),
		"tagged spec bytes":       append([]byte{0x82, 0xd8, 0x18}, signed.Encode()[1:]...),
		"version as negative":     resign(append([]byte{0x8e, 0x22}, spec[2:]...)),
		"version as float":        resign(append([]byte{0x8e, 0xf9, 0x42, 0x00}, spec[2:]...)),
		"version as text":         resign(append([]byte{0x8e, 0x61, '3'}, spec[2:]...)),
		"spec as text":            append([]byte{0x82, 0x78, byte(len(spec))}, append(bytes.Clone(spec), signed.Encode()[len(spec)+2:]...)...),
		"spec with extra element": resign(append(append([]byte{0x8f}, spec[1:]...), 0x00)),
		"spec with trailing byte": resign(append(bytes.Clone(spec), 0x00)),
	}
	for name, b := range cases {
		if _, _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%s) = %v, want ErrMalformed", name, err)
		}
	}
}
