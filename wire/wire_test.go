package wire_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/up-pool/up/wire"
)

// msgs returns one valid value of every message type, freshly built.
func msgs() map[string]wire.Validator {
	body, err := wire.Marshal(&wire.NearRequest{Target: bytes.Repeat([]byte{7}, 32), Count: 3})
	if err != nil {
		panic(err)
	}
	return map[string]wire.Validator{
		"Hello":       &wire.Hello{Version: wire.HelloVersion, Cert: []byte("cert-der"), Position: []byte("pos"), CRLNumber: 9},
		"NearRequest": &wire.NearRequest{Target: bytes.Repeat([]byte{1}, 32), Count: wire.MaxNearCount},
		"NearResponse": &wire.NearResponse{Peers: []wire.PeerRecord{
			{ID: []byte("peer-a"), Addrs: [][]byte{[]byte("addr-1"), []byte("addr-2")}},
			{ID: []byte("peer-b"), Addrs: [][]byte{}},
		}},
		"PeerRecord":  &wire.PeerRecord{ID: []byte{0x12, 0x20, 1, 2}, Addrs: [][]byte{{4, 127, 0, 0, 1}}},
		"CRLRequest":  &wire.CRLRequest{},
		"CRLResponse": &wire.CRLResponse{Number: 1 << 40, DER: []byte{0x30, 0x03, 1, 2, 3}},
		"Reply":       &wire.Reply{Status: wire.StatusNotFound, Msg: "no such job", Body: cbor.RawMessage(body)},
		"MuxRequest":  &wire.MuxRequest{ID: 7, Proto: wire.ProtoPing, Body: cbor.RawMessage(body)},
		"MuxReply":    &wire.MuxReply{ID: 7, Reply: wire.Reply{Status: wire.StatusOK, Body: cbor.RawMessage(body)}},
	}
}

// newOf returns a zero value of the same message type as v.
func newOf(v wire.Validator) wire.Validator {
	return reflect.New(reflect.TypeOf(v).Elem()).Interface().(wire.Validator)
}

func TestRoundTripEveryMessage(t *testing.T) {
	for name, v := range msgs() {
		t.Run(name, func(t *testing.T) {
			if err := v.Validate(); err != nil {
				t.Fatalf("fixture invalid: %v", err)
			}
			b, err := wire.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got := newOf(v)
			if err := wire.Decode(b, got); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, v) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, v)
			}
			// Deterministic: a second encoding, and the encoding of the
			// decoded value, are the same bytes.
			b2, _ := wire.Marshal(v)
			b3, _ := wire.Marshal(got)
			if !bytes.Equal(b, b2) || !bytes.Equal(b, b3) {
				t.Fatalf("encoding not deterministic: %x / %x / %x", b, b2, b3)
			}
			// And through a frame.
			var buf bytes.Buffer
			if err := wire.WriteFrame(&buf, v); err != nil {
				t.Fatal(err)
			}
			framed := newOf(v)
			if err := wire.ReadFrame(bufio.NewReader(&buf), wire.MaxFrame, framed); err != nil {
				t.Fatalf("read frame: %v", err)
			}
			if !reflect.DeepEqual(framed, v) {
				t.Fatalf("frame round trip: got %#v want %#v", framed, v)
			}
		})
	}
}

func TestReplyNilBodyEncodesNull(t *testing.T) {
	b, err := wire.Marshal(&wire.Reply{Status: wire.StatusInternal})
	if err != nil {
		t.Fatal(err)
	}
	// [5, "", null, null]
	if want := []byte{0x84, 0x05, 0x60, 0xf6, 0xf6}; !bytes.Equal(b, want) {
		t.Fatalf("encoding %x, want %x", b, want)
	}
	var r wire.Reply
	if err := wire.Decode(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != wire.StatusInternal || r.Msg != "" {
		t.Fatalf("decoded %+v", r)
	}
	// A null body unmarshals into the zero value, which Validate refuses
	// for a Hello.
	var h wire.Hello
	if err := wire.Decode(r.Body, &h); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("null body decoded as a Hello: %v", err)
	}
}

func TestKnownEncoding(t *testing.T) {
	// Core deterministic CBOR of [1, h'01', h'02', 0]: pins the wire format.
	b, err := wire.Marshal(&wire.Hello{Version: 1, Cert: []byte{1}, Position: []byte{2}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0x84, 0x01, 0x41, 0x01, 0x41, 0x02, 0x00}; !bytes.Equal(b, want) {
		t.Fatalf("hello encoding %x, want %x", b, want)
	}
}

func TestStatusAndErrorStrings(t *testing.T) {
	for s, want := range map[wire.Status]string{
		wire.StatusOK: "ok", wire.StatusBadRequest: "bad request", wire.StatusUnauthorized: "unauthorized",
		wire.StatusNotFound: "not found", wire.StatusRateLimited: "rate limited", wire.StatusInternal: "internal error",
		wire.Status(99): "status 99",
	} {
		if got := s.String(); got != want {
			t.Errorf("Status(%d) = %q, want %q", s, got, want)
		}
	}
	if got := (&wire.Error{Status: wire.StatusNotFound}).Error(); got != "not found" {
		t.Errorf("error without message: %q", got)
	}
	if got := (&wire.Error{Status: wire.StatusNotFound, Msg: "job 3"}).Error(); got != "not found: job 3" {
		t.Errorf("error with message: %q", got)
	}
}

func n(k int) []byte { return bytes.Repeat([]byte{0xab}, k) }

func addrs(k, size int) [][]byte {
	out := make([][]byte, k)
	for i := range out {
		out[i] = n(size)
	}
	return out
}

func peers(k int) []wire.PeerRecord {
	out := make([]wire.PeerRecord, k)
	for i := range out {
		out[i] = wire.PeerRecord{ID: n(34)}
	}
	return out
}

func TestValidateBounds(t *testing.T) {
	hello := func(ver uint16, cert, pos int) *wire.Hello {
		return &wire.Hello{Version: ver, Cert: n(cert), Position: n(pos)}
	}
	cases := []struct {
		name string
		v    wire.Validator
		ok   bool
	}{
		{"hello ok", hello(wire.HelloVersion, 1, 1), true},
		{"hello version 0", hello(0, 1, 1), false},
		{"hello version 2", hello(wire.HelloVersion+1, 1, 1), false},
		{"hello no cert", hello(wire.HelloVersion, 0, 1), false},
		{"hello cert at max", hello(wire.HelloVersion, wire.MaxCertBytes, 1), true},
		{"hello cert over max", hello(wire.HelloVersion, wire.MaxCertBytes+1, 1), false},
		{"hello no position", hello(wire.HelloVersion, 1, 0), false},
		{"hello position at max", hello(wire.HelloVersion, 1, wire.MaxPositionBytes), true},
		{"hello position over max", hello(wire.HelloVersion, 1, wire.MaxPositionBytes+1), false},

		{"near target 31", &wire.NearRequest{Target: n(31), Count: 1}, false},
		{"near target 32", &wire.NearRequest{Target: n(32), Count: 1}, true},
		{"near live", &wire.NearRequest{Target: n(32), Count: 1, Live: true}, true},
		{"near target 33", &wire.NearRequest{Target: n(33), Count: 1}, false},
		{"near count 0", &wire.NearRequest{Target: n(32), Count: 0}, false},
		{"near count max", &wire.NearRequest{Target: n(32), Count: wire.MaxNearCount}, true},
		{"near count over max", &wire.NearRequest{Target: n(32), Count: wire.MaxNearCount + 1}, false},

		{"peer no id", &wire.PeerRecord{ID: nil}, false},
		{"peer id 1", &wire.PeerRecord{ID: n(1)}, true},
		{"peer id max", &wire.PeerRecord{ID: n(wire.MaxPeerIDBytes)}, true},
		{"peer id over max", &wire.PeerRecord{ID: n(wire.MaxPeerIDBytes + 1)}, false},
		{"peer addrs max", &wire.PeerRecord{ID: n(1), Addrs: addrs(wire.MaxAddrs, 1)}, true},
		{"peer addrs over max", &wire.PeerRecord{ID: n(1), Addrs: addrs(wire.MaxAddrs+1, 1)}, false},
		{"peer empty addr", &wire.PeerRecord{ID: n(1), Addrs: addrs(1, 0)}, false},
		{"peer addr max", &wire.PeerRecord{ID: n(1), Addrs: addrs(1, wire.MaxAddrBytes)}, true},
		{"peer addr over max", &wire.PeerRecord{ID: n(1), Addrs: addrs(1, wire.MaxAddrBytes+1)}, false},

		{"near response empty", &wire.NearResponse{}, true},
		{"near response max", &wire.NearResponse{Peers: peers(wire.MaxNearCount)}, true},
		{"near response over max", &wire.NearResponse{Peers: peers(wire.MaxNearCount + 1)}, false},
		{"near response bad peer", &wire.NearResponse{Peers: append(peers(2), wire.PeerRecord{})}, false},

		{"crl request", &wire.CRLRequest{}, true},
		{"crl response empty", &wire.CRLResponse{}, true},
		{"crl response max", &wire.CRLResponse{Number: 1, DER: n(wire.MaxCRLBytes)}, true},
		{"crl response over max", &wire.CRLResponse{Number: 1, DER: n(wire.MaxCRLBytes + 1)}, false},

		{"reply msg max", &wire.Reply{Msg: strings.Repeat("x", wire.MaxReplyMsg)}, true},
		{"reply msg over max", &wire.Reply{Msg: strings.Repeat("x", wire.MaxReplyMsg+1)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.v.Validate()
			if c.ok && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !c.ok && !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("Validate = %v, want ErrMalformed", err)
			}
			// Decode applies the same bounds to bytes off the wire.
			b, err := wire.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			err = wire.Decode(b, newOf(c.v))
			if c.ok != (err == nil) || (!c.ok && !errors.Is(err, wire.ErrMalformed)) {
				t.Fatalf("Decode = %v, want ok=%v", err, c.ok)
			}
		})
	}
}

func TestUnmarshalRefuses(t *testing.T) {
	valid, _ := wire.Marshal(&wire.NearRequest{Target: n(32), Count: 2})
	cases := map[string][]byte{
		"empty":            {},
		"trailing byte":    append(bytes.Clone(valid), 0x00),
		"trailing item":    append(bytes.Clone(valid), valid...),
		"truncated":        valid[:len(valid)-1],
		"extra element":    append(append([]byte{0x83}, valid[1:]...), 0x00),
		"missing element":  {0x81, 0x40},
		"indefinite array": append(append([]byte{0x9f}, valid[1:]...), 0xff),
		"indefinite bytes": {0x82, 0x5f, 0x41, 0x01, 0xff, 0x01},
		"map not array":    {0xa2, 0x00, 0x40, 0x01, 0x01},
		"wrong type":       {0x82, 0x01, 0x01},
		"count overflow":   {0x82, 0x40, 0x1a, 0x00, 0x01, 0x00, 0x00}, // 65536 into uint16
		"negative count":   {0x82, 0x40, 0x20},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			var r wire.NearRequest
			if err := wire.Unmarshal(b, &r); !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("Unmarshal(%x) = %v, want ErrMalformed", b, err)
			}
		})
	}
	// Reply strings must be UTF-8, and a Reply may not carry a body that is
	// indefinite-length or that the encoder would refuse to write.
	for name, b := range map[string][]byte{
		"invalid utf8":     {0x83, 0x00, 0x61, 0xff, 0xf6},
		"indefinite body":  {0x83, 0x00, 0x60, 0x9f, 0xff},
		"epoch time bytes": {0x83, 0x00, 0x60, 0xc1, 0x41, 0x30}, // tag 1 holding h'30'
		"bignum of text":   {0x83, 0x00, 0x60, 0xc2, 0x61, 0x30}, // tag 2 holding "0"
	} {
		var r wire.Reply
		if err := wire.Decode(b, &r); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: Decode(%x) = %v, want ErrMalformed", name, b, err)
		}
	}
}

// keyed is a map-encoded struct, to check that unknown fields and
// duplicate keys are refused.
type keyed struct {
	A uint64 `cbor:"1,keyasint"`
	B string `cbor:"2,keyasint"`
}

func TestUnmarshalMapStructs(t *testing.T) {
	good, err := wire.Marshal(&keyed{A: 1, B: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var k keyed
	if err := wire.Unmarshal(good, &k); err != nil || k != (keyed{A: 1, B: "x"}) {
		t.Fatalf("Unmarshal(%x) = %+v, %v", good, k, err)
	}
	for name, b := range map[string][]byte{
		"unknown field": {0xa3, 0x01, 0x01, 0x02, 0x61, 'x', 0x03, 0x00},
		"duplicate key": {0xa2, 0x01, 0x01, 0x01, 0x02},
		"indefinite":    {0xbf, 0x01, 0x01, 0xff},
	} {
		var k keyed
		if err := wire.Unmarshal(b, &k); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: Unmarshal(%x) = %v, want ErrMalformed", name, b, err)
		}
	}
}

func TestMarshalUnsupported(t *testing.T) {
	if _, err := wire.Marshal(make(chan int)); err == nil {
		t.Fatal("Marshal(chan) succeeded")
	}
	if err := wire.WriteFrame(io.Discard, func() {}); err == nil {
		t.Fatal("WriteFrame(func) succeeded")
	}
}

func TestFrameLimits(t *testing.T) {
	// Announced length just inside and just outside an explicit limit.
	const limit = 100
	frame := func(announced uint64, body []byte) *bufio.Reader {
		b := binary.AppendUvarint(nil, announced)
		return bufio.NewReader(bytes.NewReader(append(b, body...)))
	}
	got, err := wire.ReadRawFrame(frame(limit, n(limit)), limit)
	if err != nil || len(got) != limit {
		t.Fatalf("frame at limit: %d bytes, %v", len(got), err)
	}
	if _, err := wire.ReadRawFrame(frame(limit+1, n(limit+1)), limit); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatalf("frame over limit: %v, want ErrFrameTooLarge", err)
	}
	// Limits <= 0 or above MaxFrame mean MaxFrame.
	for _, max := range []int{0, -1, wire.MaxFrame + 1, 1 << 40} {
		if _, err := wire.ReadRawFrame(frame(wire.MaxFrame+1, nil), max); !errors.Is(err, wire.ErrFrameTooLarge) {
			t.Errorf("limit %d, frame of MaxFrame+1: %v, want ErrFrameTooLarge", max, err)
		}
	}
	// A huge announced length with no body fails without allocating it:
	// make([]byte, 1<<62) would panic.
	if _, err := wire.ReadRawFrame(frame(1<<62, nil), 0); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatalf("frame of 2^62 bytes: %v", err)
	}
	// And an announced MaxFrame+1 allocates nowhere near MaxFrame.
	r := frame(wire.MaxFrame+1, nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = wire.ReadRawFrame(r, wire.MaxFrame)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatal(err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 256<<10 {
		t.Fatalf("refusing an oversized frame allocated %d bytes", d)
	}
	// ReadFrame passes the limit through and decodes nothing.
	var h wire.Hello
	if err := wire.ReadFrame(frame(wire.MaxHelloFrame+1, nil), wire.MaxHelloFrame, &h); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatalf("ReadFrame over limit: %v", err)
	}
}

func TestWriteFrameTooLarge(t *testing.T) {
	var buf bytes.Buffer
	if err := wire.WriteRawFrame(&buf, n(wire.MaxFrame+1)); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatalf("WriteRawFrame(MaxFrame+1) = %v", err)
	}
	if buf.Len() != 0 {
		t.Fatalf("oversized frame wrote %d bytes", buf.Len())
	}
	if err := wire.WriteFrame(&buf, &wire.CRLResponse{DER: n(wire.MaxFrame)}); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatalf("WriteFrame of a >MaxFrame encoding = %v", err)
	}
	if err := wire.WriteRawFrame(&buf, n(wire.MaxFrame)); err != nil {
		t.Fatalf("WriteRawFrame(MaxFrame) = %v", err)
	}
	body, err := wire.ReadRawFrame(bufio.NewReader(&buf), wire.MaxFrame)
	if err != nil || len(body) != wire.MaxFrame {
		t.Fatalf("read back %d bytes, %v", len(body), err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriteFrameWriterError(t *testing.T) {
	if err := wire.WriteFrame(failWriter{}, &wire.CRLRequest{}); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("WriteFrame to failing writer = %v", err)
	}
}

func TestFrameTruncatedAndSequential(t *testing.T) {
	var buf bytes.Buffer
	for _, v := range []any{&wire.CRLRequest{}, &wire.CRLResponse{Number: 3, DER: n(300)}} {
		if err := wire.WriteFrame(&buf, v); err != nil {
			t.Fatal(err)
		}
	}
	full := buf.Bytes()
	// Two frames back to back read in order, then a clean EOF.
	r := bufio.NewReader(bytes.NewReader(full))
	var a wire.CRLRequest
	var b wire.CRLResponse
	if err := wire.ReadFrame(r, 0, &a); err != nil {
		t.Fatal(err)
	}
	if err := wire.ReadFrame(r, 0, &b); err != nil || b.Number != 3 || len(b.DER) != 300 {
		t.Fatalf("second frame: %+v, %v", b, err)
	}
	if _, err := wire.ReadRawFrame(r, 0); err != io.EOF {
		t.Fatalf("after last frame: %v, want io.EOF", err)
	}
	// Every strict prefix of the second frame (past its first byte) is a
	// truncated frame, never a (wrapped) io.EOF that could pass for the
	// clean end of the stream.
	second := full[2:] // the first frame is 0x01 0x80
	for cut := 1; cut < len(second); cut++ {
		_, err := wire.ReadRawFrame(bufio.NewReader(bytes.NewReader(second[:cut])), 0)
		if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			t.Fatalf("frame cut at %d/%d: %v, want ErrUnexpectedEOF", cut, len(second), err)
		}
	}
	// A length varint that never ends overflows.
	if _, err := wire.ReadRawFrame(bufio.NewReader(bytes.NewReader(bytes.Repeat([]byte{0xff}, 11))), 0); err == nil || err == io.EOF {
		t.Fatalf("overlong varint: %v", err)
	}
	// A frame whose body is not a valid message is malformed.
	var h wire.Hello
	if err := wire.ReadFrame(bufio.NewReader(bytes.NewReader([]byte{0x01, 0xff})), 0, &h); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("garbage body: %v", err)
	}
}

func TestProtocolIDs(t *testing.T) {
	if wire.DHTProtocol != "/up/kad/1.0.0" {
		t.Fatalf("DHTProtocol = %s", wire.DHTProtocol)
	}
	for _, p := range []string{string(wire.ProtoHello), string(wire.ProtoNear), string(wire.ProtoCRL)} {
		if !strings.HasPrefix(p, "/up/") {
			t.Errorf("protocol %s outside /up/", p)
		}
	}
	// The frame bounds leave room for their largest valid message.
	hello, _ := wire.Marshal(&wire.Hello{Version: 1, Cert: n(wire.MaxCertBytes), Position: n(wire.MaxPositionBytes), CRLNumber: 1 << 63})
	rep, _ := wire.Marshal(&wire.Reply{Msg: strings.Repeat("x", wire.MaxReplyMsg), Body: hello})
	if len(rep) > wire.MaxHelloFrame {
		t.Errorf("largest hello reply %d bytes > MaxHelloFrame %d", len(rep), wire.MaxHelloFrame)
	}
	crl, _ := wire.Marshal(&wire.CRLResponse{Number: 1 << 63, DER: n(wire.MaxCRLBytes)})
	rep, _ = wire.Marshal(&wire.Reply{Msg: strings.Repeat("x", wire.MaxReplyMsg), Body: crl})
	if len(rep) > wire.MaxCRLFrame {
		t.Errorf("largest CRL reply %d bytes > MaxCRLFrame %d", len(rep), wire.MaxCRLFrame)
	}
}
