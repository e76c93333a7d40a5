package codec

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

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

// ReadText reads a text string that is valid UTF-8 (as the decoder
// requires); the result is a copy.
func ReadText(b []byte) (s string, rest []byte, ok bool) {
	n, rest, ok := ReadHead(b, 3)
	if !ok || n > uint64(len(rest)) || !utf8.Valid(rest[:n]) {
		return "", nil, false
	}
	return string(rest[:n]), rest[n:], true
}

// ReadItem reads one whole data item of any type, not necessarily in its
// shortest form; item aliases b. It only finds where the item ends: the
// caller checks the whole message with Wellformed first, as the decoder
// would.
func ReadItem(b []byte) (item, rest []byte, ok bool) {
	n, ok := itemLen(b, 0)
	if !ok {
		return nil, nil, false
	}
	return b[:n:n], b[n:], true
}

// itemLen is the length of the data item at the start of b, at nesting
// depth depth; false when it is cut off, of indefinite length, or
// nested deeper than the decoder takes.
func itemLen(b []byte, depth int) (int, bool) {
	if len(b) == 0 || depth > 2*maxNestedLevels { // past the decoder's bound: Wellformed refuses it
		return 0, false
	}
	major, info := b[0]>>5, b[0]&0x1f
	size := 0
	switch {
	case info < 24:
	case info <= 27:
		size = 1 << (info - 24)
	default:
		return 0, false // reserved, or an indefinite length
	}
	if len(b) < 1+size {
		return 0, false
	}
	arg := uint64(info)
	if size > 0 {
		arg = 0
		for _, x := range b[1 : 1+size] {
			arg = arg<<8 | uint64(x)
		}
	}
	n := 1 + size
	switch major {
	case 0, 1, 7:
		return n, true
	case 2, 3:
		if arg > uint64(len(b)-n) {
			return 0, false
		}
		return n + int(arg), true
	case 6:
		m, ok := itemLen(b[n:], depth+1)
		return n + m, ok
	}
	items := arg // 4: an array's elements; 5: a map's keys and values
	if major == 5 {
		if arg > uint64(len(b)) {
			return 0, false
		}
		items = 2 * arg
	}
	if items > uint64(len(b)-n) { // each item takes a byte at least
		return 0, false
	}
	for range items {
		m, ok := itemLen(b[n:], depth+1)
		if !ok {
			return 0, false
		}
		n += m
	}
	return n, true
}

// Wellformed reports whether b is exactly one data item the decoder would
// take (nesting, counts and lengths within its bounds; no indefinite
// length), without decoding it.
func Wellformed(b []byte) error {
	if err := decMode.Wellformed(b); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}

// AppendHead writes a head of major type major with argument arg in its
// shortest form.
func AppendHead(buf *bytes.Buffer, major byte, arg uint64) {
	m := major << 5
	switch {
	case arg < 24:
		buf.WriteByte(m | byte(arg))
	case arg <= math.MaxUint8:
		buf.Write([]byte{m | 24, byte(arg)})
	case arg <= math.MaxUint16:
		buf.Write([]byte{m | 25, byte(arg >> 8), byte(arg)})
	case arg <= math.MaxUint32:
		buf.Write([]byte{m | 26, byte(arg >> 24), byte(arg >> 16), byte(arg >> 8), byte(arg)})
	default:
		buf.Write([]byte{m | 27, byte(arg >> 56), byte(arg >> 48), byte(arg >> 40), byte(arg >> 32), byte(arg >> 24), byte(arg >> 16), byte(arg >> 8), byte(arg)})
	}
}

// AppendHeadTo appends a head of major type major with argument arg in
// its shortest form to b (AppendHead for a slice).
func AppendHeadTo(b []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(b, m|byte(arg))
	case arg <= math.MaxUint8:
		return append(b, m|24, byte(arg))
	case arg <= math.MaxUint16:
		return append(b, m|25, byte(arg>>8), byte(arg))
	case arg <= math.MaxUint32:
		return append(b, m|26, byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
	default:
		return append(b, m|27, byte(arg>>56), byte(arg>>48), byte(arg>>40), byte(arg>>32), byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
	}
}

// AppendBytes appends s as Marshal encodes a []byte: a byte string, or
// null when s is nil.
func AppendBytes(b, s []byte) []byte {
	if s == nil {
		return append(b, 0xf6)
	}
	return append(AppendHeadTo(b, 2, uint64(len(s))), s...)
}

// AppendText writes a text string as Marshal does.
func AppendText(buf *bytes.Buffer, s string) {
	AppendHead(buf, 3, uint64(len(s)))
	buf.WriteString(s)
}

// AppendNull writes CBOR null, as Marshal writes a nil pointer.
func AppendNull(buf *bytes.Buffer) { buf.WriteByte(0xf6) }

// MarshalTo appends v's encoding (Marshal's) to buf; on an error buf is
// as it was.
func MarshalTo(buf *bytes.Buffer, v any) error {
	mark := buf.Len()
	if err := encMode.MarshalToBuffer(v, buf); err != nil {
		buf.Truncate(mark)
		return fmt.Errorf("encode %T: %w", v, err)
	}
	return nil
}

// WriteFrameWith writes as one frame what fill appends to an empty
// pooled buffer (see WriteFrame).
func WriteFrameWith(w io.Writer, fill func(buf *bytes.Buffer) error) error {
	buf := getFrameBuffer()
	defer putFrameBuffer(buf)
	if err := fill(buf); err != nil {
		return err
	}
	return writeFramed(w, buf.Bytes())
}

// CheckRaw reports whether raw encodes as a cbor.RawMessage does in
// Marshal (well-formed, built-in tags with valid content), writing it
// to a pooled buffer instead of a new slice.
func CheckRaw(raw []byte) error {
	buf := framePool.Get().(*bytes.Buffer)
	buf.Reset()
	defer putFrameBuffer(buf)
	if err := encMode.MarshalToBuffer(cbor.RawMessage(raw), buf); err != nil {
		return fmt.Errorf("encode raw message: %w", err)
	}
	return nil
}

// ReadByteStringArray reads an array of byte strings whose length is
// min or len(fields) into the first that many fields (aliasing b), and
// nothing after it; false for anything else. The caller tells the two
// layouts apart by how many fields were filled (the array's head).
func ReadByteStringArray(b []byte, min int, fields ...*[]byte) (n int, ok bool) {
	count, rest, ok := ReadHead(b, 4)
	if !ok || (count != uint64(min) && count != uint64(len(fields))) {
		return 0, false
	}
	for _, f := range fields[:count] {
		if *f, rest, ok = ReadBytes(rest); !ok {
			return 0, false
		}
	}
	return int(count), len(rest) == 0
}

// AcquireBuffer is an empty pooled buffer, for an encoding used only
// until ReleaseBuffer (the frame buffers' pool).
func AcquireBuffer() *bytes.Buffer {
	b := framePool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// ReleaseBuffer gives b back to the pool: nothing may use its bytes after.
func ReleaseBuffer(b *bytes.Buffer) { putFrameBuffer(b) }

// Frame is a frame being encoded into a pooled buffer, written later in
// one Write (WriteTo) and then released.
type Frame struct{ buf *bytes.Buffer }

// NewFrame is an empty frame (its buffer has room for the length).
func NewFrame() *Frame { return &Frame{buf: getFrameBuffer()} }

// Buf is the buffer the frame's body is appended to.
func (f *Frame) Buf() *bytes.Buffer { return f.buf }

// Write writes the frame to w: its length, then its body, in one Write.
func (f *Frame) Write(w io.Writer) error { return writeFramed(w, f.buf.Bytes()) }

// Release gives the frame's buffer back to the pool.
func (f *Frame) Release() { putFrameBuffer(f.buf) }
