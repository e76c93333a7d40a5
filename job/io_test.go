package job

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

// testSpecV4 is testSpecV3 with its blob input as standard input and two
// output files.
func testSpecV4() *Spec {
	s := testSpecV3()
	s.Version = specVersion4
	s.Stdin = uint16(len(s.Inputs)) // the blob input, the last
	s.Outputs = []string{"tile.png", "log_1.txt"}
	return s
}

// TestSpecV4RoundTrip: a version 4 spec takes the 16-element layout and
// decodes to the same spec; LeastVersion asks for 4 only when standard
// input or output files are used, so other specs keep version 3's bytes.
func TestSpecV4RoundTrip(t *testing.T) {
	key := testKey(4)
	s := testSpecV4()
	signed := mustSign(t, s, key)
	if signed.Spec[0] != specV4Header {
		t.Fatalf("spec starts with %#x, want the 16-element array %#x", signed.Spec[0], specV4Header)
	}
	_, got, err := Decode(signed.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Stdin != s.Stdin || strings.Join(got.Outputs, ",") != "tile.png,log_1.txt" || !bytes.Equal(got.Module, s.Module) {
		t.Fatalf("decoded stdin %d outputs %q module %x", got.Stdin, got.Outputs, got.Module)
	}
	if v := s.LeastVersion(); v != specVersion4 {
		t.Fatalf("LeastVersion of a spec with standard input = %d", v)
	}
	if v := testSpecV3().LeastVersion(); v != specVersion3 {
		t.Fatalf("control: LeastVersion of a spec without = %d, want 3", v)
	}
}

// TestSpecV4Bounds: standard input beyond the inputs, bad or repeated
// output names, too many outputs, and version 4 fields in a version 3
// spec are refused, each with ErrMalformed; the well-formed spec is the
// control.
func TestSpecV4Bounds(t *testing.T) {
	key := testKey(5)
	if _, err := Sign(testSpecV4(), key); err != nil {
		t.Fatalf("control: %v", err)
	}
	for name, f := range map[string]func(s *Spec){
		"stdin past the inputs": func(s *Spec) { s.Stdin = uint16(len(s.Inputs) + 1) },
		"output with a slash":   func(s *Spec) { s.Outputs = []string{"a/b"} },
		"output dot-dot":        func(s *Spec) { s.Outputs = []string{".."} },
		"output empty":          func(s *Spec) { s.Outputs = []string{""} },
		"output too long":       func(s *Spec) { s.Outputs = []string{strings.Repeat("a", MaxOutputNameLen+1)} },
		"output twice":          func(s *Spec) { s.Outputs = []string{"a", "a"} },
		"too many outputs":      func(s *Spec) { s.Outputs = strings.Split(strings.Repeat("x,", MaxOutputs)+"y", ",") },
		"version 3 with stdin":  func(s *Spec) { s.Version, s.Outputs = specVersion3, nil },
		"version 3 with output": func(s *Spec) { s.Version, s.Stdin = specVersion3, 0 },
	} {
		s := testSpecV4()
		f(s)
		if _, err := Sign(s, key); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Sign = %v, want ErrMalformed", name, err)
		}
	}
	// A version 3 number in the version 4 layout is refused on decode.
	s := testSpecV4()
	good := mustSign(t, s, key)
	bad := bytes.Clone(good.Spec)
	bad[1] = byte(specVersion3)
	if _, _, err := Decode((&Signed{Spec: bad, Sig: ed25519.Sign(key, signPayload(bad))}).Encode()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("version 3 in the version 4 layout: %v", err)
	}
}

// TestPackOutputs: packed outputs decode to what was packed, files not
// written left out; the same inputs give the same bytes; a file the spec
// does not name, or out of order, is refused.
func TestPackOutputs(t *testing.T) {
	names := []string{"a.txt", "b.bin", "c"}
	b := PackOutputs([]byte("out\n"), names, [][]byte{[]byte("A"), nil, {}})
	if !bytes.Equal(b, PackOutputs([]byte("out\n"), names, [][]byte{[]byte("A"), nil, {}})) {
		t.Fatal("packing is not deterministic")
	}
	o, err := UnpackOutputs(b, names)
	if err != nil {
		t.Fatal(err)
	}
	if string(o.Stdout) != "out\n" || len(o.Files) != 2 || o.Files[0].Name != "a.txt" || string(o.Files[0].Data) != "A" || o.Files[1].Name != "c" || len(o.Files[1].Data) != 0 {
		t.Fatalf("unpacked %+v", o)
	}
	if _, err := UnpackOutputs(b, []string{"c", "a.txt"}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("files out of the spec's order: %v", err)
	}
	if _, err := UnpackOutputs(b, []string{"a.txt"}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a file the spec does not name: %v", err)
	}
	if _, err := UnpackOutputs([]byte("not cbor"), names); !errors.Is(err, ErrMalformed) {
		t.Fatalf("garbage: %v", err)
	}
}

func FuzzUnpackOutputs(f *testing.F) {
	f.Add(PackOutputs([]byte("x"), []string{"a", "b"}, [][]byte{[]byte("1"), []byte("2")}), "a,b")
	f.Add([]byte{0x82, 0x40, 0x80}, "")
	f.Fuzz(func(t *testing.T, b []byte, names string) {
		ns := strings.Split(names, ",")
		o, err := UnpackOutputs(b, ns)
		if err != nil {
			return
		}
		var data [][]byte
		j := 0
		for _, n := range ns {
			if j < len(o.Files) && o.Files[j].Name == n {
				data = append(data, o.Files[j].Data)
				j++
			} else {
				data = append(data, nil)
			}
		}
		if j != len(o.Files) {
			t.Fatalf("accepted files %v against names %q", o.Files, ns)
		}
	})
}
