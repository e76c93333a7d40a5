package job

import (
	"crypto/ed25519"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

func repeatStrings(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func inputs(n int) []Input {
	out := make([]Input, n)
	for i := range out {
		out[i] = Input{URL: "https://e.org/x", SHA256: make([]byte, 32), Size: 1}
	}
	return out
}

func blobInputs(n int) []Input {
	out := make([]Input, n)
	for i := range out {
		out[i] = Input{Blob: testBlobKey(string(rune('a' + i%26)))}
	}
	return out
}

func blobInput(in Input) func(*Spec) {
	return func(s *Spec) { s.Inputs = []Input{in} }
}

func oneInput(url string, sum []byte, size int64) func(*Spec) {
	return func(s *Spec) { s.Inputs = []Input{{URL: url, SHA256: sum, Size: size}} }
}

// boundCases are spec changes just inside (ok) and just outside each bound.
var boundCases = []struct {
	name   string
	mutate func(*Spec)
	ok     bool
}{
	{"base", func(*Spec) {}, true},
	{"version 0", func(s *Spec) { s.Version = 0 }, false},
	{"version next", func(s *Spec) { s.Version = SpecVersion + 1 }, false},
	{"version 2", func(s *Spec) { s.Version = 2 }, true},
	{"version 1", func(s *Spec) { s.Version = 1 }, true},

	{"project empty", func(s *Spec) { s.Project = "" }, false},
	{"project 1", func(s *Spec) { s.Project = "p" }, true},
	{"project max", func(s *Spec) { s.Project = strings.Repeat("p", MaxNameLen) }, true},
	{"project max+1", func(s *Spec) { s.Project = strings.Repeat("p", MaxNameLen+1) }, false},
	{"project bad utf-8", func(s *Spec) { s.Project = "p\xff" }, false},

	{"app empty", func(s *Spec) { s.App = "" }, false},
	{"app max", func(s *Spec) { s.App = strings.Repeat("a", MaxAppLen) }, true},
	{"app max+1", func(s *Spec) { s.App = strings.Repeat("a", MaxAppLen+1) }, false},
	{"app bad utf-8", func(s *Spec) { s.App = "\xc3" }, false},

	{"args none", func(s *Spec) { s.Args = nil }, true},
	{"args max", func(s *Spec) { s.Args = repeatStrings(MaxArgs, "x") }, true},
	{"args max+1", func(s *Spec) { s.Args = repeatStrings(MaxArgs+1, "x") }, false},
	{"arg max len", func(s *Spec) { s.Args = []string{strings.Repeat("x", MaxArgLen)} }, true},
	{"arg max len+1", func(s *Spec) { s.Args = []string{"", strings.Repeat("x", MaxArgLen+1)} }, false},
	{"arg with spaces", func(s *Spec) { s.Args = []string{"a b (c)"} }, true},
	{"arg bad utf-8", func(s *Spec) { s.Args = []string{"ok", "\xff\xfe"} }, false},

	{"inputs none", func(s *Spec) { s.Inputs = nil }, true},
	{"inputs max", func(s *Spec) { s.Inputs = inputs(MaxInputs) }, true},
	{"inputs max+1", func(s *Spec) { s.Inputs = inputs(MaxInputs + 1) }, false},
	{"input URL empty", oneInput("", make([]byte, 32), 0), false},
	{"input URL 1", oneInput("u", make([]byte, 32), 0), true},
	{"input URL max", oneInput(strings.Repeat("u", MaxURLLen), make([]byte, 32), 0), true},
	{"input URL max+1", oneInput(strings.Repeat("u", MaxURLLen+1), make([]byte, 32), 0), false},
	{"input URL bad utf-8", oneInput("https://e.org/\xff", make([]byte, 32), 0), false},
	{"input sha256 nil", oneInput("u", nil, 0), false},
	{"input sha256 31", oneInput("u", make([]byte, 31), 0), false},
	{"input sha256 33", oneInput("u", make([]byte, 33), 0), false},
	{"input size 0", oneInput("u", make([]byte, 32), 0), true},
	{"input size -1", oneInput("u", make([]byte, 32), -1), false},
	{"input size max", oneInput("u", make([]byte, 32), 1<<63-1), true},
	{"second input bad", func(s *Spec) { s.Inputs = append(inputs(1), Input{URL: "u", SHA256: make([]byte, 32), Size: -1}) }, false},

	{"module", func(s *Spec) { s.Module = testBlobKey("m") }, true},
	{"module garbage", func(s *Spec) { s.Module = []byte("module") }, false},
	{"module raw CID", func(s *Spec) { s.Module = testCID(cid.Raw, multihash.SHA2_256, "m") }, false},
	{"module sha2-512", func(s *Spec) { s.Module = testCID(cid.DagCBOR, multihash.SHA2_512, "m") }, false},
	{"module trailing byte", func(s *Spec) { s.Module = append(testBlobKey("m"), 0) }, false},
	{"blob input", blobInput(Input{Blob: testBlobKey("b")}), true},
	{"blob input with size", blobInput(Input{Blob: testBlobKey("b"), Size: 64 << 20}), true},
	{"blob inputs max", func(s *Spec) { s.Inputs = blobInputs(MaxInputs) }, true},
	{"blob inputs max+1", func(s *Spec) { s.Inputs = blobInputs(MaxInputs + 1) }, false},
	{"blob and URL inputs", func(s *Spec) { s.Inputs = append(inputs(1), blobInputs(1)...) }, true},
	{"blob input with a URL", blobInput(Input{Blob: testBlobKey("b"), URL: "u"}), false},
	{"blob input with a sha256", blobInput(Input{Blob: testBlobKey("b"), SHA256: make([]byte, 32)}), false},
	{"blob input with an empty sha256", blobInput(Input{Blob: testBlobKey("b"), SHA256: []byte{}}), true},
	{"blob input size -1", blobInput(Input{Blob: testBlobKey("b"), Size: -1}), false},
	{"blob input bad key", blobInput(Input{Blob: []byte{1, 2, 3}}), false},
	{"blob input raw CID", blobInput(Input{Blob: testCID(cid.Raw, multihash.SHA2_256, "b")}), false},
	{"input neither URL nor blob", blobInput(Input{}), false},

	{"keywords none", func(s *Spec) { s.Keywords = nil }, false},
	{"keywords empty", func(s *Spec) { s.Keywords = []string{} }, false},
	{"keywords 1", func(s *Spec) { s.Keywords = []string{"k"} }, true},
	{"keywords max", func(s *Spec) { s.Keywords = repeatStrings(MaxKeywords, "k") }, true},
	{"keywords max+1", func(s *Spec) { s.Keywords = repeatStrings(MaxKeywords+1, "k") }, false},
	{"keyword max len", func(s *Spec) { s.Keywords = []string{strings.Repeat("k", MaxKeywordLen)} }, true},
	{"keyword max len+1", func(s *Spec) { s.Keywords = []string{strings.Repeat("k", MaxKeywordLen+1)} }, false},
	{"keyword empty", func(s *Spec) { s.Keywords = []string{"a", ""} }, false},
	{"keyword space", func(s *Spec) { s.Keywords = []string{"LHC run"} }, false},
	{"keyword tab", func(s *Spec) { s.Keywords = []string{"LHC\trun"} }, false},
	{"keyword newline", func(s *Spec) { s.Keywords = []string{"LHC\n"} }, false},
	{"keyword NUL", func(s *Spec) { s.Keywords = []string{"\x00"} }, false},
	{"keyword DEL", func(s *Spec) { s.Keywords = []string{"a\x7f"} }, false},
	{"keyword (", func(s *Spec) { s.Keywords = []string{"(LHC"} }, false},
	{"keyword )", func(s *Spec) { s.Keywords = []string{"LHC)"} }, false},
	{"keyword bad utf-8", func(s *Spec) { s.Keywords = []string{"LHC\xff"} }, false},
	{"keyword unicode", func(s *Spec) { s.Keywords = []string{"Überjob:µ<128MB!&|"} }, true},

	{"resources none", func(s *Spec) { s.Resources = nil }, true},
	{"resources max", func(s *Spec) { s.Resources = repeatStrings(MaxResources, "mem:1") }, true},
	{"resources max+1", func(s *Spec) { s.Resources = repeatStrings(MaxResources+1, "mem:1") }, false},
	{"resource space", func(s *Spec) { s.Resources = []string{"mem: 1"} }, false},
	{"resource empty", func(s *Spec) { s.Resources = []string{""} }, false},
	{"resource too long", func(s *Spec) { s.Resources = []string{strings.Repeat("r", MaxKeywordLen+1)} }, false},

	{"T_finish 1", func(s *Spec) { s.TFinish = 1 }, true},
	{"T_finish 0", func(s *Spec) { s.TFinish = 0 }, false},
	{"T_finish -1", func(s *Spec) { s.TFinish = -1 }, false},
	{"created 1", func(s *Spec) { s.Created = 1 }, true},
	{"created 0", func(s *Spec) { s.Created = 0 }, false},
	{"created -1", func(s *Spec) { s.Created = -1 }, false},

	{"nonce nil", func(s *Spec) { s.Nonce = nil }, false},
	{"nonce short", func(s *Spec) { s.Nonce = make([]byte, NonceLen-1) }, false},
	{"nonce long", func(s *Spec) { s.Nonce = make([]byte, NonceLen+1) }, false},
	{"cert ref nil", func(s *Spec) { s.CertRef = nil }, false},
	{"cert ref short", func(s *Spec) { s.CertRef = make([]byte, CertRefLen-1) }, false},
	{"cert ref long", func(s *Spec) { s.CertRef = make([]byte, CertRefLen+1) }, false},
}

// TestSpecBounds checks each bound through Validate, Sign and Decode: a
// spec just inside signs and round-trips; one just outside is refused by
// all three, even when a forger encodes and signs it by hand.
func TestSpecBounds(t *testing.T) {
	key := testKey(1)
	pub := key.Public().(ed25519.PublicKey)
	for _, tt := range boundCases {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec()
			tt.mutate(spec)
			err := spec.Validate()
			if !tt.ok {
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("Validate = %v, want ErrMalformed", err)
				}
				if _, err := Sign(spec, key); !errors.Is(err, ErrMalformed) {
					t.Errorf("Sign = %v, want ErrMalformed", err)
				}
				if _, _, err := Decode(rawSigned(t, spec, key)); !errors.Is(err, ErrMalformed) {
					t.Errorf("Decode of a hand-signed spec = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate = %v, want nil", err)
			}
			signed, err := Sign(spec, key)
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			got, gotSpec, err := Decode(signed.Encode())
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(gotSpec, spec) {
				t.Errorf("round trip changed the spec:\n%+v\n%+v", gotSpec, spec)
			}
			if err := got.Verify(pub); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

func TestValidateKeyword(t *testing.T) {
	ok := []string{"k", "LHC", "LHC:mem:<128MB", "a-b_c.d/e", "日本", strings.Repeat("k", MaxKeywordLen)}
	bad := []string{"", " ", "a b", "a\tb", "\n", "\r", "\x00", "\x1f", "\x7f", "(", ")", "f(x)",
		"\xff", "a\xc3", strings.Repeat("k", MaxKeywordLen+1), strings.Repeat("é", MaxKeywordLen/2+1)}
	for _, k := range ok {
		if err := ValidateKeyword(k); err != nil {
			t.Errorf("ValidateKeyword(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range bad {
		if err := ValidateKeyword(k); !errors.Is(err, ErrMalformed) {
			t.Errorf("ValidateKeyword(%q) = %v, want ErrMalformed", k, err)
		}
	}
}
