package job

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/up-pool/up/codec"
)

func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

// testSpec is a valid spec with every field set.
func testSpec() *Spec {
	return &Spec{
		Version: specVersion3,
		Project: "lhc",
		App:     "sixtrack",
		Args:    []string{"-n", "1000", ""},
		Inputs: []Input{
			{URL: "https://example.org/in/1", SHA256: bytes.Repeat([]byte{1}, 32), Size: 123456},
			{URL: "https://example.org/in/2", SHA256: bytes.Repeat([]byte{2}, 32)},
		},
		Keywords:  []string{"LHC", "LHC:mem:<128MB"},
		Resources: []string{"mem:<128MB", "bw:cable"},
		TFinish:   3_600_000,
		Created:   1_760_000_000_000,
		Nonce:     bytes.Repeat([]byte{0xab}, NonceLen),
		CertRef:   CertRef([]byte("project certificate DER")),
		ResultKey: bytes.Repeat([]byte{0xef}, ResultKeyLen),
	}
}

func mustSign(t testing.TB, s *Spec, key ed25519.PrivateKey) *Signed {
	t.Helper()
	signed, err := Sign(s, key)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return signed
}

// rawSigned encodes spec and signs it without Sign's checks, as a forger
// or a buggy project would.
func rawSigned(t testing.TB, s *Spec, key ed25519.PrivateKey) []byte {
	t.Helper()
	b, err := codec.Marshal(s)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return (&Signed{Spec: b, Sig: ed25519.Sign(key, signPayload(b))}).Encode()
}

func TestSignDecodeRoundTrip(t *testing.T) {
	key := testKey(1)
	spec := testSpec()
	signed := mustSign(t, spec, key)
	enc := signed.Encode()
	got, gotSpec, err := Decode(enc)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !reflect.DeepEqual(gotSpec, spec) {
		t.Errorf("decoded spec\n%+v\nwant\n%+v", gotSpec, spec)
	}
	if !bytes.Equal(got.Spec, signed.Spec) || !bytes.Equal(got.Sig, signed.Sig) {
		t.Error("decoded signed spec differs")
	}
	if !bytes.Equal(got.Encode(), enc) {
		t.Error("re-encoding differs")
	}
	if err := got.Verify(key.Public().(ed25519.PublicKey)); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if got.CID() != signed.CID() {
		t.Error("decoded CID differs")
	}

	// Optional fields left empty round-trip too.
	spec = testSpec()
	spec.Args, spec.Inputs, spec.Resources = nil, nil, nil
	_, gotSpec, err = Decode(mustSign(t, spec, key).Encode())
	if err != nil {
		t.Fatalf("Decode of a minimal spec: %v", err)
	}
	if !reflect.DeepEqual(gotSpec, spec) {
		t.Errorf("decoded minimal spec\n%+v\nwant\n%+v", gotSpec, spec)
	}
}

func TestSignRejectsInvalid(t *testing.T) {
	spec := testSpec()
	spec.Keywords = nil
	if _, err := Sign(spec, testKey(1)); !errors.Is(err, ErrMalformed) {
		t.Errorf("Sign of a spec without keywords = %v, want ErrMalformed", err)
	}
}

func TestCIDStable(t *testing.T) {
	key := testKey(1)
	a := mustSign(t, testSpec(), key)
	b := mustSign(t, testSpec(), key)
	if a.CID() != b.CID() || !bytes.Equal(a.Key(), b.Key()) {
		t.Errorf("same spec, different CIDs: %s, %s", a.CID(), b.CID())
	}
	if a.CID() != a.CID() {
		t.Error("CID changes between calls")
	}
	other := testSpec()
	other.Nonce[NonceLen-1] ^= 1
	if c := mustSign(t, other, key).CID(); c == a.CID() {
		t.Errorf("different nonces, same CID %s", c)
	}
	other = testSpec()
	other.Created++
	if c := mustSign(t, other, key).CID(); c == a.CID() {
		t.Error("different creation times, same CID")
	}
	if c := mustSign(t, testSpec(), testKey(2)).CID(); c == a.CID() {
		t.Error("different signers, same CID")
	}
}

func TestCIDFormat(t *testing.T) {
	signed := mustSign(t, testSpec(), testKey(1))
	c := signed.CID()
	if c.Version() != 1 || c.Type() != cid.DagCBOR || c.Type() != 0x71 {
		t.Errorf("CID %s: version %d codec %#x, want 1, dag-cbor", c, c.Version(), c.Type())
	}
	p := c.Prefix()
	if p.MhType != multihash.SHA2_256 || p.MhLength != sha256.Size {
		t.Errorf("CID %s: multihash %#x/%d, want sha2-256/32", c, p.MhType, p.MhLength)
	}
	dm, err := multihash.Decode(c.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(signed.Encode()); !bytes.Equal(dm.Digest, sum[:]) {
		t.Error("CID digest is not sha256 of Encode()")
	}
	if !strings.HasPrefix(c.String(), "bafyrei") {
		t.Errorf("CID %s does not look like a CIDv1 dag-cbor sha2-256", c)
	}
	if !bytes.Equal(signed.Key(), c.Bytes()) {
		t.Error("Key() is not the CID's bytes")
	}
	parsed, err := ParseKey(signed.Key())
	if err != nil || parsed != c {
		t.Errorf("ParseKey(Key()) = %s, %v; want %s", parsed, err, c)
	}
}

func TestParseKeyRejects(t *testing.T) {
	data := []byte("some job")
	sum := func(code uint64, length int) multihash.Multihash {
		mh, err := multihash.Sum(data, code, length)
		if err != nil {
			t.Fatal(err)
		}
		return mh
	}
	good := cid.NewCidV1(cid.DagCBOR, sum(multihash.SHA2_256, -1)).Bytes()
	if _, err := ParseKey(good); err != nil {
		t.Fatalf("ParseKey of a CIDv1 dag-cbor sha2-256: %v", err)
	}
	bad := map[string][]byte{
		"nil":             nil,
		"empty":           {},
		"garbage":         []byte("not a cid at all"),
		"one byte":        {0x01},
		"cidv0":           cid.NewCidV0(sum(multihash.SHA2_256, -1)).Bytes(),
		"bare multihash":  sum(multihash.SHA2_256, -1),
		"raw codec":       cid.NewCidV1(cid.Raw, sum(multihash.SHA2_256, -1)).Bytes(),
		"dag-pb":          cid.NewCidV1(cid.DagProtobuf, sum(multihash.SHA2_256, -1)).Bytes(),
		"dag-json":        cid.NewCidV1(cid.DagJSON, sum(multihash.SHA2_256, -1)).Bytes(),
		"sha2-512":        cid.NewCidV1(cid.DagCBOR, sum(multihash.SHA2_512, -1)).Bytes(),
		"sha3-256":        cid.NewCidV1(cid.DagCBOR, sum(multihash.SHA3_256, -1)).Bytes(),
		"identity":        cid.NewCidV1(cid.DagCBOR, sum(multihash.IDENTITY, -1)).Bytes(),
		"truncated hash":  cid.NewCidV1(cid.DagCBOR, sum(multihash.SHA2_256, 20)).Bytes(),
		"trailing byte":   append(bytes.Clone(good), 0),
		"missing byte":    good[:len(good)-1],
		"version 2":       append([]byte{2}, good[1:]...),
		"version 0 codec": append([]byte{0}, good[1:]...),
	}
	for name, b := range bad {
		if c, err := ParseKey(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseKey(%s) = %s, %v; want ErrMalformed", name, c, err)
		}
	}
}

func TestCertRef(t *testing.T) {
	der := []byte("certificate")
	want := sha256.Sum256(der)
	if got := CertRef(der); !bytes.Equal(got, want[:]) || len(got) != CertRefLen {
		t.Errorf("CertRef = %x, want %x", got, want)
	}
}

func TestVerify(t *testing.T) {
	key := testKey(1)
	pub := key.Public().(ed25519.PublicKey)
	signed := mustSign(t, testSpec(), key)
	if err := signed.Verify(pub); err != nil {
		t.Fatalf("Verify with the right key: %v", err)
	}
	wrong := testKey(2).Public().(ed25519.PublicKey)
	for name, k := range map[string]ed25519.PublicKey{"wrong key": wrong, "nil key": nil, "short key": pub[:31]} {
		if err := signed.Verify(k); !errors.Is(err, ErrBadSignature) {
			t.Errorf("Verify with %s = %v, want ErrBadSignature", name, err)
		}
	}
	tampered := &Signed{Spec: signed.Spec, Sig: bytes.Clone(signed.Sig)}
	tampered.Sig[10] ^= 1
	if err := tampered.Verify(pub); !errors.Is(err, ErrBadSignature) {
		t.Errorf("Verify of a tampered signature = %v, want ErrBadSignature", err)
	}
	// The signature covers the domain-separated payload, not bare spec bytes.
	bare := &Signed{Spec: signed.Spec, Sig: ed25519.Sign(key, signed.Spec)}
	if err := bare.Verify(pub); !errors.Is(err, ErrBadSignature) {
		t.Errorf("Verify of a signature without the domain = %v, want ErrBadSignature", err)
	}
}

// TestTamperedSpec flips bits at every position of the spec bytes and of
// the whole encoding: the result must fail to decode or fail to verify.
func TestTamperedSpec(t *testing.T) {
	key := testKey(1)
	pub := key.Public().(ed25519.PublicKey)
	signed := mustSign(t, testSpec(), key)
	enc := signed.Encode()
	var decoded int
	check := func(what string, b []byte) {
		s, _, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: Decode = %v, want ErrMalformed", what, err)
			}
			return
		}
		decoded++
		if err := s.Verify(pub); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s decodes and Verify = %v, want ErrBadSignature", what, err)
		}
	}
	for i := range signed.Spec {
		for _, mask := range []byte{0x01, 0x20, 0x80, 0xff} {
			spec := bytes.Clone(signed.Spec)
			spec[i] ^= mask
			check("spec byte", (&Signed{Spec: spec, Sig: signed.Sig}).Encode())
		}
	}
	for i := range enc {
		for _, mask := range []byte{0x01, 0x80} {
			b := bytes.Clone(enc)
			b[i] ^= mask
			check("encoding byte", b)
		}
	}
	if decoded == 0 {
		t.Error("no tampered spec decoded; Verify was never reached")
	}
}

func TestDecodeRejectsStructure(t *testing.T) {
	key := testKey(1)
	signed := mustSign(t, testSpec(), key)
	enc := signed.Encode()
	sigOf := func(n int) []byte { return bytes.Repeat([]byte{7}, n) }
	cases := map[string][]byte{
		"empty":             nil,
		"trailing byte":     append(bytes.Clone(enc), 0),
		"trailing signed":   append(bytes.Clone(enc), enc...),
		"truncated":         enc[:len(enc)-1],
		"spec trailing":     (&Signed{Spec: append(bytes.Clone(signed.Spec), 0), Sig: signed.Sig}).Encode(),
		"spec truncated":    (&Signed{Spec: signed.Spec[:len(signed.Spec)-1], Sig: signed.Sig}).Encode(),
		"empty spec":        (&Signed{Sig: signed.Sig}).Encode(),
		"no signature":      (&Signed{Spec: signed.Spec}).Encode(),
		"signature 63":      (&Signed{Spec: signed.Spec, Sig: sigOf(63)}).Encode(),
		"signature 65":      (&Signed{Spec: signed.Spec, Sig: sigOf(65)}).Encode(),
		"signature 128":     (&Signed{Spec: signed.Spec, Sig: sigOf(128)}).Encode(),
		"three elements":    append([]byte{0x83}, append(enc[1:], 0x40)...),
		"one element":       append([]byte{0x81}, enc[1:len(enc)-len(signed.Sig)-2]...),
		"map":               mustMarshal(t, map[int][]byte{0: signed.Spec, 1: signed.Sig}),
		"spec is a map":     (&Signed{Spec: mustMarshal(t, map[string]int{"Version": 1}), Sig: signed.Sig}).Encode(),
		"signed is a spec":  signed.Spec,
		"oversize garbage":  bytes.Repeat([]byte{0x40}, MaxSignedSize+1),
		"indefinite signed": append(append([]byte{0x9f}, enc[1:]...), 0xff),
	}
	for name, b := range cases {
		if _, _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%s) = %v, want ErrMalformed", name, err)
		}
	}
	// A signature of the right length is not checked by Decode: Verify does.
	s, _, err := Decode((&Signed{Spec: signed.Spec, Sig: sigOf(64)}).Encode())
	if err != nil {
		t.Fatalf("Decode with a 64-byte bogus signature: %v", err)
	}
	if err := s.Verify(key.Public().(ed25519.PublicKey)); !errors.Is(err, ErrBadSignature) {
		t.Errorf("Verify of a bogus signature = %v", err)
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := codec.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signedOfSize returns a valid spec whose signed encoding is exactly n bytes.
func signedOfSize(t *testing.T, n int) *Spec {
	t.Helper()
	size := func(s *Spec) int {
		return len((&Signed{Spec: mustMarshal(t, s), Sig: make([]byte, signatureBytes)}).Encode())
	}
	for nameLen := 1; nameLen <= MaxNameLen; nameLen++ {
		s := testSpec()
		s.Project = strings.Repeat("p", nameLen)
		s.Args = make([]string, MaxArgs)
		for i := range s.Args {
			s.Args[i] = strings.Repeat("a", MaxArgLen)
		}
		for l := MaxArgLen; l >= 0; l-- {
			s.Args[0] = strings.Repeat("a", l)
			if got := size(s); got == n {
				return s
			} else if got < n {
				break
			}
		}
	}
	t.Fatalf("no spec of %d bytes found", n)
	return nil
}

func TestDecodeSizeBound(t *testing.T) {
	key := testKey(1)
	inside := signedOfSize(t, MaxSignedSize)
	signed, err := Sign(inside, key)
	if err != nil {
		t.Fatalf("Sign of a %d-byte signed spec: %v", MaxSignedSize, err)
	}
	if _, _, err := Decode(signed.Encode()); err != nil {
		t.Errorf("Decode of %d bytes: %v", MaxSignedSize, err)
	}
	outside := signedOfSize(t, MaxSignedSize+1)
	if err := outside.Validate(); err != nil {
		t.Fatalf("the oversize spec should pass Validate: %v", err)
	}
	raw := rawSigned(t, outside, key)
	if len(raw) != MaxSignedSize+1 {
		t.Fatalf("raw encoding of %d bytes", len(raw))
	}
	if _, _, err := Decode(raw); !errors.Is(err, ErrMalformed) {
		t.Errorf("Decode of %d bytes = %v, want ErrMalformed", len(raw), err)
	}
	// Sign must not produce what Decode refuses.
	if _, err := Sign(outside, key); !errors.Is(err, ErrMalformed) {
		t.Errorf("Sign of an oversize spec = %v, want ErrMalformed", err)
	}
}
