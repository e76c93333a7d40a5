package job

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/up-pool/up/codec"
)

// testBlobKey is a blob key (a manifest CID's bytes) made from seed.
func testBlobKey(seed string) []byte {
	return testCID(cid.DagCBOR, multihash.SHA2_256, seed)
}

func testCID(codecType, hash uint64, seed string) []byte {
	mh, err := multihash.Sum([]byte(seed), hash, -1)
	if err != nil {
		panic(err)
	}
	return cid.NewCidV1(codecType, mh).Bytes()
}

// testSpecV3 is testSpec with a WebAssembly module and a blob input
// beside its URL inputs.
func testSpecV3() *Spec {
	s := testSpec()
	s.App = "mandelbrot"
	s.Module = testBlobKey("module")
	s.Inputs = append(s.Inputs, Input{Blob: testBlobKey("input"), Size: 4 << 20})
	return s
}

// testSpecVersion is testSpec as a spec of an earlier version (1 or 2).
func testSpecVersion(v uint16) *Spec {
	s := testSpec()
	s.Version = v
	if v == specVersion2 {
		s.Lifetime = 14 * day
	}
	return s
}

// TestSpecV3RoundTrip: a spec naming a module and a blob input signs,
// decodes to the same spec and keeps its bytes, in the version 3 layout.
func TestSpecV3RoundTrip(t *testing.T) {
	key := testKey(1)
	s := testSpecV3()
	signed := mustSign(t, s, key)
	if signed.Spec[0] != specV3Header {
		t.Fatalf("spec starts with %#x, want the 14-element array %#x", signed.Spec[0], specV3Header)
	}
	got, gotSpec, err := Decode(signed.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotSpec, s) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", gotSpec, s)
	}
	if !bytes.Equal(got.Encode(), signed.Encode()) || got.Verify(key.Public().(ed25519.PublicKey)) != nil {
		t.Fatal("re-encoding differs or does not verify")
	}
	if !gotSpec.UsesBlobs() || testSpec().UsesBlobs() {
		t.Fatal("UsesBlobs wrong")
	}
	onlyInput := testSpec()
	onlyInput.Inputs = []Input{{Blob: testBlobKey("input")}}
	onlyModule := testSpec()
	onlyModule.Module = testBlobKey("module")
	for _, s := range []*Spec{onlyInput, onlyModule} {
		if !s.UsesBlobs() {
			t.Errorf("UsesBlobs false for %+v", s)
		}
		if _, _, err := Decode(mustSign(t, s, key).Encode()); err != nil {
			t.Errorf("Decode: %v", err)
		}
	}
}

// TestOlderVersionsStillDecode: specs in the version 1 and 2 layouts
// (hand-encoded, as the code of their time wrote them: 3-field inputs, no
// module) decode, keep their bytes and so their CIDs, and their units are
// those of the same spec in version 3.
func TestOlderVersionsStillDecode(t *testing.T) {
	key := testKey(1)
	for _, v := range []uint16{specVersion1, specVersion2} {
		s := testSpecVersion(v)
		b, _, _ := handSpec(s, -1, 0)
		if want := byte(0x80 + 11 + v); b[0] != want {
			t.Fatalf("version %d layout starts with %#x, want %#x", v, b[0], want)
		}
		enc := (&Signed{Spec: b, Sig: ed25519.Sign(key, signPayload(b))}).Encode()
		signed, got, err := Decode(enc)
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if !bytes.Equal(signed.Encode(), enc) || !reflect.DeepEqual(got, s) {
			t.Fatalf("version %d: decodes to %+v, re-encodes equal %v", v, got, bytes.Equal(signed.Encode(), enc))
		}
		if re := mustMarshal(t, got); !bytes.Equal(re, b) {
			t.Fatalf("version %d re-marshals differently: its CID would change", v)
		}
		cur := testSpecVersion(v)
		cur.Version, cur.Lifetime = specVersion3, 0
		if !bytes.Equal(got.UnitKey(), cur.UnitKey()) {
			t.Fatalf("version %d: unit key differs from the same spec's in version %d", v, specVersion3)
		}
	}
}

// TestV3FieldsRefusedInOlderVersions is the negative control of the
// version gate: a module or a blob input in a version 1 or 2 spec is
// refused by Validate, Sign and the encoder, and a hand-made encoding
// that smuggles one in (a version 2 number in the version 3 layout; a
// version 2 layout with 4-field inputs) by Decode. The same fields in a
// version 3 spec pass.
func TestV3FieldsRefusedInOlderVersions(t *testing.T) {
	key := testKey(1)
	withModule := func(s *Spec) { s.Module = testBlobKey("m") }
	withBlob := func(s *Spec) { s.Inputs = []Input{{Blob: testBlobKey("in")}} }
	for _, v := range []uint16{specVersion1, specVersion2, specVersion3} {
		for name, mutate := range map[string]func(*Spec){"module": withModule, "blob input": withBlob} {
			s := testSpecVersion(v)
			if v == specVersion3 {
				s = testSpec()
			}
			mutate(s)
			_, signErr := Sign(s, key)
			_, marshalErr := codec.Marshal(s)
			validErr := s.Validate()
			if v == specVersion3 {
				if signErr != nil || marshalErr != nil || validErr != nil {
					t.Errorf("version %d with a %s: %v, %v, %v; want it accepted", v, name, signErr, marshalErr, validErr)
				}
				continue
			}
			if !errors.Is(validErr, ErrMalformed) || !errors.Is(signErr, ErrMalformed) || marshalErr == nil {
				t.Errorf("version %d with a %s: Validate %v, Sign %v, Marshal %v; want all refused", v, name, validErr, signErr, marshalErr)
			}
		}
	}
	// By hand: the version 3 layout of a spec with a blob input.
	s := testSpec()
	withBlob(s)
	s.Version = specVersion2
	asV3, _, _ := handSpec(withVersion(s, specVersion3), -1, 0)
	if asV3[1] != specVersion3 || asV3[len(asV3)-1] != 0xf6 {
		t.Fatalf("the version 3 layout does not start with its version and end with a null module: %x", asV3)
	}
	asV3[1] = byte(specVersion2)                                 // a version 2 number in the version 3 layout
	asV2 := append([]byte{specV2Header}, asV3[1:len(asV3)-1]...) // drop the null module: 4-field inputs in the version 2 layout
	for name, b := range map[string][]byte{"version 2 in the version 3 layout": asV3, "version 2 layout with a blob input": asV2} {
		if _, _, err := Decode((&Signed{Spec: b, Sig: ed25519.Sign(key, signPayload(b))}).Encode()); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%s) = %v, want ErrMalformed", name, err)
		} else {
			t.Logf("Decode(%s): %v", name, err)
		}
	}
	good, _, _ := handSpec(withVersion(s, specVersion3), -1, 0)
	if _, _, err := Decode((&Signed{Spec: good, Sig: ed25519.Sign(key, signPayload(good))}).Encode()); err != nil {
		t.Errorf("control: the same spec as version %d: %v", specVersion3, err)
	}
}

func withVersion(s *Spec, v uint16) *Spec {
	c := *s
	c.Version = v
	return &c
}

// TestUnitKeyV3: a spec without a module or blob input has the unit key
// it had before version 3 (older and newer nodes agree on it); a module or
// a blob input, and which one, changes the unit.
func TestUnitKeyV3(t *testing.T) {
	s := testSpec()
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q", s.Project, s.App, s.Args)
	for _, in := range s.Inputs {
		h.Write(in.SHA256)
	}
	if !bytes.Equal(s.UnitKey(), h.Sum(nil)) {
		t.Fatal("a spec without module or blob input changed its unit key")
	}
	keys := map[string]string{}
	add := func(name string, s *Spec) {
		k := string(s.UnitKey())
		if other, ok := keys[k]; ok {
			t.Errorf("%s and %s are one unit", name, other)
		}
		keys[k] = name
	}
	add("no module", testSpec())
	m1, m2 := testSpec(), testSpec()
	m1.Module, m2.Module = testBlobKey("a"), testBlobKey("b")
	add("module a", m1)
	add("module b", m2)
	b1, b2 := testSpec(), testSpec()
	b1.Inputs = append(b1.Inputs, Input{Blob: testBlobKey("x")})
	b2.Inputs = append(b2.Inputs, Input{Blob: testBlobKey("y")})
	add("blob input x", b1)
	add("blob input y", b2)
	// Copies (other nonce, creation, keywords) stay one unit.
	c := testSpecV3()
	c.Nonce, c.Created, c.Keywords = bytes.Repeat([]byte{9}, NonceLen), 42, []string{"other"}
	if !bytes.Equal(c.UnitKey(), testSpecV3().UnitKey()) {
		t.Error("two copies of a version 3 unit have different unit keys")
	}
}

// TestParseBlobKey: a blob key is a CIDv1 dag-cbor sha2-256 in its one
// binary form, nothing else.
func TestParseBlobKey(t *testing.T) {
	good := testBlobKey("b")
	if c, err := ParseBlobKey(good); err != nil || !bytes.Equal(c.Bytes(), good) {
		t.Fatalf("ParseBlobKey(good) = %v, %v", c, err)
	}
	bad := map[string][]byte{
		"empty":            {},
		"garbage":          []byte("not a cid"),
		"raw (a chunk)":    testCID(cid.Raw, multihash.SHA2_256, "b"),
		"sha2-512":         testCID(cid.DagCBOR, multihash.SHA2_512, "b"),
		"trailing byte":    append(bytes.Clone(good), 0),
		"truncated":        good[:len(good)-1],
		"long version":     append([]byte{0x81, 0x00}, good[1:]...),
		"cidv0":            cid.NewCidV0(must(multihash.Sum([]byte("b"), multihash.SHA2_256, -1))).Bytes(),
		"long codec":       append([]byte{0x01, 0xf1, 0x00}, good[2:]...),
		"sha2-256 of 20 B": testCIDLen("b", 20),
	}
	for name, b := range bad {
		if _, err := ParseBlobKey(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseBlobKey(%s) = %v, want ErrMalformed", name, err)
		}
	}
}

func testCIDLen(seed string, n int) []byte {
	return cid.NewCidV1(cid.DagCBOR, must(multihash.Sum([]byte(seed), multihash.SHA2_256, n))).Bytes()
}

func must(mh multihash.Multihash, err error) multihash.Multihash {
	if err != nil {
		panic(err)
	}
	return mh
}
