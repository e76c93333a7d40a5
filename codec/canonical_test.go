package codec

import (
	"bytes"
	"math"
	"testing"
)

// TestReadersAgreeWithMarshal: what Marshal writes, the readers read back
// whole; a longer head than needed, another type or a cut-off item is
// refused (controls: the codec's Unmarshal takes the longer heads).
func TestReadersAgreeWithMarshal(t *testing.T) {
	for _, v := range []int64{0, 1, 23, 24, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64, -1, -24, -25, -256, -257, math.MinInt64} {
		b, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, rest, ok := ReadInt(b)
		if !ok || got != v || len(rest) != 0 {
			t.Errorf("ReadInt(%x) = %d, %x, %v; want %d", b, got, rest, ok, v)
		}
	}
	for _, n := range []int{0, 1, 23, 24, 255, 256, 70000} {
		want := bytes.Repeat([]byte{7}, n)
		b, _ := Marshal(want)
		got, rest, ok := ReadBytes(b)
		if !ok || !bytes.Equal(got, want) || len(rest) != 0 {
			t.Errorf("ReadBytes of %d bytes: ok %v, %d bytes, rest %d", n, ok, len(got), len(rest))
		}
		if _, _, ok := ReadBytes(b[:len(b)-1]); ok && n > 0 {
			t.Errorf("ReadBytes of %d bytes cut short: taken", n)
		}
	}
	for _, v := range []bool{false, true} {
		b, _ := Marshal(v)
		if got, _, ok := ReadBool(b); !ok || got != v {
			t.Errorf("ReadBool(%x) = %v, %v", b, got, ok)
		}
	}
	for _, c := range []struct {
		b    []byte
		into any
	}{
		{[]byte{0x18, 0x05}, new(int64)},        // 5 in a one-byte head
		{[]byte{0x19, 0x00, 0xff}, new(int64)},  // 255 in a two-byte head
		{[]byte{0x58, 0x01, 0xaa}, new([]byte)}, // a one-byte string with a one-byte head
		{[]byte{0x39, 0x00, 0x01}, new(int64)},  // -2 in a two-byte head
	} {
		if err := Unmarshal(c.b, c.into); err != nil {
			t.Fatalf("control: Unmarshal(%x): %v", c.b, err)
		}
		_, _, okInt := ReadInt(c.b)
		_, _, okBytes := ReadBytes(c.b)
		if okInt || okBytes {
			t.Errorf("%x: a longer head than needed was read", c.b)
		}
	}
	for _, b := range [][]byte{nil, {0x40 | 0x1f}, {0x1c}, {0x1b, 0x80, 0, 0, 0, 0, 0, 0, 0}, {0x60}, {0xf6}} {
		_, _, okInt := ReadInt(b)
		_, _, okBytes := ReadBytes(b)
		_, _, okBool := ReadBool(b)
		if okInt || okBytes || okBool {
			t.Errorf("%x: read as an int %v, bytes %v, bool %v", b, okInt, okBytes, okBool)
		}
	}
}

// TestAppendersAgreeWithMarshal: AppendHeadTo and AppendBytes write what
// Marshal writes, a nil []byte as null and an empty one as an empty
// string included (control: the nil and the empty one differ).
func TestAppendersAgreeWithMarshal(t *testing.T) {
	for _, v := range []uint64{0, 1, 23, 24, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxUint64} {
		want, _ := Marshal(v)
		if got := AppendHeadTo([]byte{9}, 0, v); !bytes.Equal(got[1:], want) || got[0] != 9 {
			t.Errorf("AppendHeadTo(%d) = %x, want %x after 09", v, got, want)
		}
	}
	cases := [][]byte{nil, {}}
	for _, n := range []int{1, 23, 24, 255, 256, 65535, 65536} {
		cases = append(cases, bytes.Repeat([]byte{5}, n))
	}
	for _, s := range cases {
		want, _ := Marshal(s)
		if got := AppendBytes(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendBytes of %d bytes (nil %v) = %x…, want %x…", len(s), s == nil, got[:min(4, len(got))], want[:min(4, len(want))])
		}
	}
	if bytes.Equal(AppendBytes(nil, nil), AppendBytes(nil, []byte{})) {
		t.Error("control: nil and empty byte strings encode alike")
	}
}
