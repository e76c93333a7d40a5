package wire

import (
	"bufio"
	"io"

	"github.com/up-pool/up/codec"
)

// MaxFrame is the largest frame any /up/ protocol accepts, in bytes.
const MaxFrame = codec.MaxFrame

// Errors of the codec.
var (
	ErrFrameTooLarge = codec.ErrFrameTooLarge
	ErrMalformed     = codec.ErrMalformed
)

// Marshal encodes v in core deterministic CBOR (see package codec).
func Marshal(v any) ([]byte, error) { return codec.Marshal(v) }

// Unmarshal decodes strict CBOR into v (see package codec).
func Unmarshal(b []byte, v any) error { return codec.Unmarshal(b, v) }

// WriteFrame writes v as one frame.
func WriteFrame(w io.Writer, v any) error { return codec.WriteFrame(w, v) }

// WriteRawFrame writes encoded bytes as one frame.
func WriteRawFrame(w io.Writer, body []byte) error { return codec.WriteRawFrame(w, body) }

// ReadRawFrame reads one frame of at most max bytes.
func ReadRawFrame(r *bufio.Reader, max int) ([]byte, error) { return codec.ReadRawFrame(r, max) }

// ReadFrame reads one frame of at most max bytes into v.
func ReadFrame(r *bufio.Reader, max int, v any) error { return codec.ReadFrame(r, max, v) }
