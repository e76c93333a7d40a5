package codec

import "testing"

// TestArrayLen: the element count of a definite-length array is read from
// its head, for short and one-byte counts; anything else is -1. Fields
// counts what a toarray struct encodes to, which ArrayLen then reads.
func TestArrayLen(t *testing.T) {
	type four struct {
		_          struct{} `cbor:",toarray"`
		A, B, C, D int
		hidden     int
	}
	b, err := Marshal(&four{A: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := Fields(four{}); n != 4 || ArrayLen(b) != 4 {
		t.Fatalf("Fields %d, ArrayLen %d; want 4 and 4", n, ArrayLen(b))
	}
	for _, c := range []struct {
		in   []byte
		want int
	}{
		{[]byte{0x80}, 0},
		{[]byte{0x97}, 23},
		{[]byte{0x98, 24}, 24},
		{[]byte{0x98}, -1},       // count cut off
		{[]byte{0x9f}, -1},       // indefinite length
		{[]byte{0xa1}, -1},       // a map
		{[]byte{0x99, 0, 1}, -1}, // a two-byte count: not one of ours
		{nil, -1},
	} {
		if got := ArrayLen(c.in); got != c.want {
			t.Errorf("ArrayLen(%x) = %d, want %d", c.in, got, c.want)
		}
	}
	_ = four{}.hidden
}
