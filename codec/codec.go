// Package codec owns U.P.'s encoding: deterministic, bounded CBOR (core
// deterministic encoding, strict decoding) and length-prefixed frames on
// streams. It is pure: it imports no network package.
package codec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/fxamacker/cbor/v2"
)

// MaxFrame is the largest frame any /up/ protocol accepts, in bytes. Each
// protocol passes its own, smaller bound to ReadFrame.
const MaxFrame = 8 << 20

// ErrFrameTooLarge reports a frame whose announced length exceeds the bound.
var ErrFrameTooLarge = errors.New("frame too large")

// ErrMalformed reports bytes that do not decode to the expected message.
var ErrMalformed = errors.New("malformed message")

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	encMode, err = cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	decMode, err = cbor.DecOptions{
		MaxNestedLevels:   16,
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

// WriteFrame writes v as one frame: its CBOR length as an unsigned varint,
// then the CBOR bytes.
func WriteFrame(w io.Writer, v any) error {
	body, err := Marshal(v)
	if err != nil {
		return err
	}
	return WriteRawFrame(w, body)
}

// WriteRawFrame writes already encoded bytes as one frame.
func WriteRawFrame(w io.Writer, body []byte) error {
	if len(body) > MaxFrame {
		return fmt.Errorf("write frame of %d bytes: %w", len(body), ErrFrameTooLarge)
	}
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(len(body)))
	buf := make([]byte, 0, n+len(body))
	buf = append(buf, hdr[:n]...)
	buf = append(buf, body...)
	_, err := w.Write(buf)
	return err
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
