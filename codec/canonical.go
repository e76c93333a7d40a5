package codec

import "math"

// Readers of the canonical encoding (core deterministic CBOR, as Marshal
// writes it) for hand-written decoders of hot fixed layouts: each reads
// one item from the start of b in its shortest form and returns what
// follows; ok is false for anything else (another type, a longer head
// than needed, an indefinite length, a cut-off item). A decoder built
// from them accepts only bytes Marshal would write, so it needs no
// re-encoding to check that an object has one encoding.

// ReadHead reads a head of major type major (0 unsigned integer, 1
// negative integer, 2 byte string, 3 text string, 4 array, 5 map) and
// returns its argument.
func ReadHead(b []byte, major byte) (arg uint64, rest []byte, ok bool) {
	if len(b) == 0 || b[0]>>5 != major {
		return 0, nil, false
	}
	info := b[0] & 0x1f
	var size int
	switch {
	case info < 24:
		return uint64(info), b[1:], true
	case info == 24:
		size = 1
	case info == 25:
		size = 2
	case info == 26:
		size = 4
	case info == 27:
		size = 8
	default:
		return 0, nil, false
	}
	if len(b) < 1+size {
		return 0, nil, false
	}
	var v uint64
	for _, x := range b[1 : 1+size] {
		v = v<<8 | uint64(x)
	}
	if shortest := [9]uint64{1: 24, 2: 0x100, 4: 0x10000, 8: 0x100000000}[size]; v < shortest {
		return 0, nil, false // a shorter head holds it
	}
	return v, b[1+size:], true
}

// ReadBytes reads a byte string; the result aliases b.
func ReadBytes(b []byte) (bs, rest []byte, ok bool) {
	n, rest, ok := ReadHead(b, 2)
	if !ok || n > uint64(len(rest)) {
		return nil, nil, false
	}
	return rest[:n:n], rest[n:], true
}

// ReadInt reads an integer that fits an int64 (major type 0 or 1).
func ReadInt(b []byte) (v int64, rest []byte, ok bool) {
	if len(b) == 0 {
		return 0, nil, false
	}
	major := b[0] >> 5
	if major > 1 {
		return 0, nil, false
	}
	n, rest, ok := ReadHead(b, major)
	if !ok || n > math.MaxInt64 {
		return 0, nil, false
	}
	if major == 1 {
		return -1 - int64(n), rest, true
	}
	return int64(n), rest, true
}

// ReadBool reads false or true.
func ReadBool(b []byte) (v bool, rest []byte, ok bool) {
	switch {
	case len(b) == 0:
		return false, nil, false
	case b[0] == 0xf4:
		return false, b[1:], true
	case b[0] == 0xf5:
		return true, b[1:], true
	}
	return false, nil, false
}
