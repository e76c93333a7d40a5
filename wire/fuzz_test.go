package wire_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/up-pool/up/wire"
)

// fuzzTypes is the order in which FuzzReadFrame tries the message types.
var fuzzTypes = []string{"Hello", "NearRequest", "NearResponse", "PeerRecord", "CRLRequest", "CRLResponse", "Reply", "MuxRequest", "MuxReply"}

// seedEncodings returns the CBOR encoding of every valid fixture message,
// plus a few edge values.
func seedEncodings(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	add := func(v any) {
		b, err := wire.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	m := msgs()
	for _, name := range fuzzTypes {
		add(m[name])
	}
	add(&wire.Hello{Version: wire.HelloVersion, Cert: n(wire.MaxCertBytes), Position: n(wire.MaxPositionBytes)})
	add(&wire.NearResponse{Peers: peers(3)})
	add(&wire.Reply{Status: wire.StatusOK})
	add(&wire.CRLResponse{})
	return out
}

func frameOf(body []byte) []byte {
	var buf bytes.Buffer
	if err := wire.WriteRawFrame(&buf, body); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// checkDecode decodes b into a fresh value like proto; if that succeeds, the
// value must re-encode deterministically and decode again to an equal value.
func checkDecode(t *testing.T, proto wire.Validator, b []byte) {
	v := newOf(proto)
	err := wire.Decode(b, v)
	if err != nil {
		if !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("Decode into %T: error %v does not wrap ErrMalformed", v, err)
		}
		return
	}
	enc, err := wire.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal of decoded %T: %v", v, err)
	}
	w := newOf(proto)
	if err := wire.Decode(enc, w); err != nil {
		t.Fatalf("re-decode %T from %x: %v", v, enc, err)
	}
	normalise(v)
	normalise(w)
	if !reflect.DeepEqual(v, w) {
		t.Fatalf("%T changed on re-encoding:\n first %#v\nsecond %#v", v, v, w)
	}
	enc2, err := wire.Marshal(w)
	if err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("%T encoding not stable: %x then %x (%v)", v, enc, enc2, err)
	}
}

// normalise maps a Reply's absent body to the CBOR null it is encoded as:
// nil and {0xf6} are the same body on the wire. (A top-level CBOR null
// decodes as the zero value of any message, so a Reply read from a bare
// null has a nil body, and its re-encoding a null one.)
func normalise(v wire.Validator) {
	if r, ok := v.(*wire.Reply); ok && len(r.Body) == 0 {
		r.Body = cbor.RawMessage{0xf6}
	}
	if r, ok := v.(*wire.MuxReply); ok && len(r.Reply.Body) == 0 {
		r.Reply.Body = cbor.RawMessage{0xf6}
	}
}

// FuzzReadFrame feeds arbitrary bytes to the frame reader and decodes each
// frame as every message type.
func FuzzReadFrame(f *testing.F) {
	for _, b := range seedEncodings(f) {
		f.Add(frameOf(b))
	}
	f.Add([]byte{})
	f.Add([]byte{0x00})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	m := msgs()
	f.Fuzz(func(t *testing.T, data []byte) {
		body, err := wire.ReadRawFrame(bufio.NewReader(bytes.NewReader(data)), wire.MaxNearFrame)
		if err != nil {
			if len(data) > 0 && errors.Is(err, io.EOF) {
				t.Fatalf("non-empty input read as a clean end of stream: %v", err)
			}
			return
		}
		if len(body) > wire.MaxNearFrame {
			t.Fatalf("frame of %d bytes over its limit", len(body))
		}
		for _, name := range fuzzTypes {
			checkDecode(t, m[name], body)
			// ReadFrame agrees with ReadRawFrame + Unmarshal.
			errFrame := wire.ReadFrame(bufio.NewReader(bytes.NewReader(data)), wire.MaxNearFrame, newOf(m[name]))
			errRaw := wire.Unmarshal(body, newOf(m[name]))
			if (errFrame == nil) != (errRaw == nil) {
				t.Fatalf("%s: ReadFrame %v, Unmarshal %v", name, errFrame, errRaw)
			}
		}
	})
}

func fuzzDecode(f *testing.F, proto wire.Validator, extra ...[]byte) {
	for _, b := range seedEncodings(f) {
		f.Add(b)
	}
	for _, b := range extra {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, proto, data) })
}

func FuzzDecodeHello(f *testing.F) {
	fuzzDecode(f, &wire.Hello{},
		[]byte{0x84, 0x01, 0x41, 0x01, 0x41, 0x02, 0x00},
		[]byte{0x84, 0x01, 0xc2, 0x41, 0x01, 0x41, 0x02, 0x00}) // tagged cert
}

func FuzzDecodeNearResponse(f *testing.F) {
	fuzzDecode(f, &wire.NearResponse{},
		[]byte{0x81, 0x80},
		[]byte{0x81, 0x81, 0x82, 0x41, 0x01, 0x81, 0x41, 0x02})
}

func FuzzDecodeReply(f *testing.F) {
	fuzzDecode(f, &wire.Reply{},
		[]byte{0x84, 0x00, 0x60, 0xf6, 0xf6},
		[]byte{0x84, 0x03, 0x62, 'h', 'i', 0xa1, 0x01, 0x02, 0xf6},
		append(append([]byte{0x84, 0x00, 0x60}, mustMarshal(&wire.Hello{Version: 1, Cert: []byte{1}, Position: []byte{2}})...), 0xf6),
		mustMarshal(&wire.Reply{Load: &wire.LoadInfo{IndexEntries: 3, Rate: 1.5, Capacity: 1}}))
}

func mustMarshal(v any) []byte {
	b, err := wire.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestReplyBodyKeptVerbatim: a Reply's body is kept and re-encoded byte for
// byte (it is decoded later, into the caller's type).
func TestReplyBodyKeptVerbatim(t *testing.T) {
	body := []byte{0xa2, 0x01, 0x02, 0x03, 0x04} // {1: 2, 3: 4}
	b, err := wire.Marshal(&wire.Reply{Body: cbor.RawMessage(body)})
	if err != nil {
		t.Fatal(err)
	}
	var r wire.Reply
	if err := wire.Decode(b, &r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Body, body) {
		t.Fatalf("body %x, want %x", []byte(r.Body), body)
	}
}

func FuzzDecodeMuxRequest(f *testing.F) {
	fuzzDecode(f, &wire.MuxRequest{},
		mustMarshal(&wire.MuxRequest{ID: 1, Proto: wire.ProtoPing, Body: cbor.RawMessage{0x80}}),
		[]byte{0x83, 0x01, 0x64, '/', 'u', 'p', '/', 0xf6})
}

func FuzzDecodeMuxReply(f *testing.F) {
	fuzzDecode(f, &wire.MuxReply{},
		mustMarshal(&wire.MuxReply{ID: 1, Reply: wire.Reply{Status: wire.StatusOK, Body: cbor.RawMessage{0x80}}}),
		[]byte{0x82, 0x01, 0x84, 0x00, 0x60, 0xf6, 0xf6})
}
