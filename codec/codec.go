// Package codec owns U.P.'s encoding: deterministic, bounded CBOR (core
// deterministic encoding, strict decoding) and length-prefixed frames on
// streams. It is pure: it imports no network package.
package codec

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// MaxFrame is the largest frame any /up/ protocol accepts, in bytes. Each
// protocol passes its own, smaller bound to ReadFrame.
const MaxFrame = 8 << 20

// ErrFrameTooLarge reports a frame whose announced length exceeds the bound.
var ErrFrameTooLarge = errors.New("frame too large")

// ErrMalformed reports bytes that do not decode to the expected message.
var ErrMalformed = errors.New("malformed message")

// maxNestedLevels bounds how deep a decoded item nests.
const maxNestedLevels = 16

var (
	encMode cbor.UserBufferEncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	encMode, err = cbor.CoreDetEncOptions().UserBufferEncMode()
	if err != nil {
		panic(err)
	}
	decMode, err = cbor.DecOptions{
		MaxNestedLevels:   maxNestedLevels,
		MaxArrayElements:  65536,
		MaxMapPairs:       4096,
		IndefLength:       cbor.IndefLengthForbidden,
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
	}.DecMode()
	if err != nil {
		panic(err)
	}
}

// Marshal encodes v in core deterministic CBOR: equal values give equal bytes.
func Marshal(v any) ([]byte, error) {
	b, err := encMode.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return b, nil
}

// Unmarshal decodes CBOR bytes into v, refusing trailing bytes, indefinite
// lengths, duplicate keys and unknown fields.
func Unmarshal(b []byte, v any) error {
	if len(b) > 0 && (b[0] == 0xf6 || b[0] == 0xf7) {
		return fmt.Errorf("decode %T: %w: null or undefined instead of a value", v, ErrMalformed)
	}
	rest, err := decMode.UnmarshalFirst(b, v)
	if err != nil {
		return fmt.Errorf("decode %T: %w: %v", v, ErrMalformed, err)
	}
	if len(rest) != 0 {
		return fmt.Errorf("decode %T: %w: %d trailing bytes", v, ErrMalformed, len(rest))
	}
	return nil
}

// ArrayLen is the number of elements of the definite-length CBOR array b
// starts with (at most 255), or -1: a decoder that knows several layouts
// of a message by their element counts tries only the one b has, without
// a failed decode (and its error) per message of the other.
func ArrayLen(b []byte) int {
	switch {
	case len(b) >= 1 && b[0] >= 0x80 && b[0] <= 0x97:
		return int(b[0] - 0x80)
	case len(b) >= 2 && b[0] == 0x98:
		return int(b[1])
	}
	return -1
}

// Fields is the number of elements a struct of v's type encodes to as a
// CBOR array (its exported fields but the `_` marker): the count
// ArrayLen finds for one of its layouts.
func Fields(v any) int {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	n := 0
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() {
			n++
		}
	}
	return n
}

// WriteFrame writes v as one frame: its CBOR length as an unsigned varint,
// then the CBOR bytes.
func WriteFrame(w io.Writer, v any) error {
	buf := getFrameBuffer()
	defer putFrameBuffer(buf)
	if err := encMode.MarshalToBuffer(v, buf); err != nil {
		return fmt.Errorf("encode %T: %w", v, err)
	}
	return writeFramed(w, buf.Bytes())
}

// WriteRawFrame writes already encoded bytes as one frame.
func WriteRawFrame(w io.Writer, body []byte) error {
	buf := getFrameBuffer()
	defer putFrameBuffer(buf)
	buf.Write(body)
	return writeFramed(w, buf.Bytes())
}

// writeFramed writes b's body, which follows binary.MaxVarintLen64 bytes
// of room, as one frame: the length goes in the room's end and the frame
// leaves in one Write (one muxer frame, one syscall).
func writeFramed(w io.Writer, b []byte) error {
	body := len(b) - binary.MaxVarintLen64
	if body > MaxFrame {
		return fmt.Errorf("write frame of %d bytes: %w", body, ErrFrameTooLarge)
	}
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(body))
	start := binary.MaxVarintLen64 - n
	copy(b[start:], hdr[:n])
	_, err := w.Write(b[start:])
	return err
}

// framePool holds the buffers frames are written from: io.Writer's
// contract is that Write does not keep the slice, so a buffer is reused
// once the write returns.
var framePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledFrame is the largest buffer put back in framePool (bytes): a
// rare large frame does not keep its memory alive.
const maxPooledFrame = 64 << 10

// getFrameBuffer is an empty pooled buffer but for binary.MaxVarintLen64
// bytes of room for the frame's length (writeFramed fills it).
func getFrameBuffer() *bytes.Buffer {
	b := framePool.Get().(*bytes.Buffer)
	b.Reset()
	var room [binary.MaxVarintLen64]byte
	b.Write(room[:])
	return b
}

func putFrameBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledFrame {
		framePool.Put(b)
	}
}

// ReadRawFrame reads one frame of at most max bytes and returns its body.
func ReadRawFrame(r *bufio.Reader, max int) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("read frame length: %w", err)
	}
	if max <= 0 || max > MaxFrame {
		max = MaxFrame
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("read frame of %d bytes (limit %d): %w", n, max, ErrFrameTooLarge)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			// The length arrived but no body: a truncated frame, not the
			// clean end of the stream that a bare io.EOF reports.
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read frame body: %w", err)
	}
	return body, nil
}

// ReadFrame reads one frame of at most max bytes and decodes it into v.
func ReadFrame(r *bufio.Reader, max int, v any) error {
	body, err := ReadRawFrame(r, max)
	if err != nil {
		return err
	}
	return Unmarshal(body, v)
}
