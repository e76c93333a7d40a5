package wire_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/wire"
)

// muxFrame is the body of a frame WriteFrame writes for v.
func muxFrame(t testing.TB, v any) []byte {
	t.Helper()
	b, err := wire.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// framed strips the length WriteFrame puts before a frame's body.
func framed(t testing.TB, b []byte) []byte {
	t.Helper()
	_, n := binary.Uvarint(b)
	if n <= 0 {
		t.Fatalf("frame %x has no length", b)
	}
	return b[n:]
}

// FuzzMuxFrames: the hand readers of mux frames take what the codec
// takes, with the same fields, and refuse what it refuses.
func FuzzMuxFrames(f *testing.F) {
	get := muxFrame(f, &wire.GetRequest{Keys: [][]byte{[]byte("k")}})
	f.Add(muxFrame(f, &wire.MuxRequest{ID: 7, Proto: "/up/job/get/1.0.0", Body: cbor.RawMessage(get)}))
	f.Add(muxFrame(f, &wire.MuxRequest{ID: 1 << 40, Proto: "/up/x", Body: cbor.RawMessage{0xf6}}))
	f.Add(muxFrame(f, &wire.MuxReply{ID: 3, Reply: wire.Reply{Status: wire.StatusOK, Body: cbor.RawMessage(get)}}))
	f.Add(muxFrame(f, &wire.MuxReply{ID: 300, Reply: wire.Reply{Status: wire.StatusInternal, Msg: "boom"}}))
	f.Add(muxFrame(f, &wire.MuxReply{ID: 4, Reply: wire.Reply{Status: wire.StatusOK, Body: cbor.RawMessage(get), Load: &wire.LoadInfo{IndexEntries: 3, Rate: 1.5}}}))
	f.Add([]byte{0x83, 0x18, 0x07, 0x61, 0x61, 0x01})             // a wide ID: the codec's
	f.Add([]byte{0x83, 0x07, 0x61, 0x61, 0xd9, 0xd9, 0xf7, 0x01}) // a self-described body: the codec strips the tag
	f.Add([]byte{0x82, 0x07, 0x84, 0x00, 0x60, 0xd9, 0xd9, 0xf7, 0x01, 0xf6})
	f.Add([]byte{0x82, 0x01, 0x84, 0x00, 0x60, 0x9f, 0xff, 0xf6})
	f.Fuzz(func(t *testing.T, b []byte) {
		var req, refReq wire.MuxRequest
		err, refErr := wire.DecodeMuxRequest(b, &req), codec.Unmarshal(b, &refReq)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("request: hand %v, codec %v", err, refErr)
		}
		if err == nil && (req.ID != refReq.ID || req.Proto != refReq.Proto || !bytes.Equal(req.Body, refReq.Body)) {
			t.Fatalf("request read differently: %+v, codec %+v", req, refReq)
		}
		var rep, refRep wire.MuxReply
		err, refErr = wire.DecodeMuxReply(b, &rep), codec.Unmarshal(b, &refRep)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("reply: hand %v, codec %v", err, refErr)
		}
		if err == nil && (rep.ID != refRep.ID || rep.Reply.Status != refRep.Reply.Status || rep.Reply.Msg != refRep.Reply.Msg ||
			!bytes.Equal(rep.Reply.Body, refRep.Reply.Body) || !sameLoad(t, rep.Reply.Load, refRep.Reply.Load)) {
			t.Fatalf("reply read differently: %+v, codec %+v", rep, refRep)
		}
	})
}

// sameLoad compares two loads by their encodings (a NaN rate is one).
func sameLoad(t *testing.T, a, b *wire.LoadInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(muxFrame(t, a), muxFrame(t, b))
}

// TestMuxWritersAreMarshal: the hand writers write exactly the frames
// WriteFrame writes for the same request or reply, body encoded in
// place; a body that does not encode becomes a StatusInternal reply.
// Control: a reply with another status differs.
func TestMuxWritersAreMarshal(t *testing.T) {
	body := &wire.GetRequest{Keys: [][]byte{[]byte("key"), bytes.Repeat([]byte{1}, 300)}}
	enc := muxFrame(t, body)
	for _, id := range []uint64{0, 23, 24, 255, 256, 1 << 20, 1 << 40} {
		var got, want bytes.Buffer
		if err := wire.WriteMuxRequest(&got, id, "/up/job/get/1.0.0", enc); err != nil {
			t.Fatal(err)
		}
		if err := wire.WriteFrame(&want, &wire.MuxRequest{ID: id, Proto: "/up/job/get/1.0.0", Body: cbor.RawMessage(enc)}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("request %d: %x, want %x", id, got.Bytes(), want.Bytes())
		}
		for _, r := range []wire.ReplyParts{
			{Status: wire.StatusOK, Body: body},
			{Status: wire.StatusOK, Body: body, Load: &wire.LoadInfo{ClosestJobs: 9, Capacity: 2, LastMove: -1}},
			{Status: wire.StatusNotFound, Msg: "no such job"},
			{Status: wire.StatusBadRequest, Msg: strings.Repeat("x", 5000)},
		} {
			got.Reset()
			want.Reset()
			if bodyErr, err := wire.WriteMuxReply(&got, id, r); bodyErr != nil || err != nil {
				t.Fatal(bodyErr, err)
			}
			ref := wire.Reply{Status: r.Status, Msg: r.Msg, Load: r.Load}
			if len(ref.Msg) > wire.MaxReplyMsg {
				ref.Msg = ref.Msg[:wire.MaxReplyMsg]
			}
			if r.Body != nil {
				ref.Body = cbor.RawMessage(enc)
			}
			if err := wire.WriteFrame(&want, &wire.MuxReply{ID: id, Reply: ref}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("reply %d %+v:\n%x\nwant %x", id, r.Status, got.Bytes(), want.Bytes())
			}
			var back wire.MuxReply
			if err := wire.DecodeMuxReply(framed(t, got.Bytes()), &back); err != nil || back.ID != id || back.Reply.Status != r.Status {
				t.Errorf("reply %d does not read back: %v %+v", id, err, back)
			}
		}
	}
	var got bytes.Buffer
	bodyErr, err := wire.WriteMuxReply(&got, 5, wire.ReplyParts{Status: wire.StatusOK, Body: make(chan int)})
	var back wire.MuxReply
	if bodyErr == nil || err != nil || wire.DecodeMuxReply(framed(t, got.Bytes()), &back) != nil || back.Reply.Status != wire.StatusInternal {
		t.Fatalf("a body that does not encode: %v, %v, read back %+v", bodyErr, err, back)
	}
	var a, b bytes.Buffer
	_, _ = wire.WriteMuxReply(&a, 1, wire.ReplyParts{Status: wire.StatusOK})
	_, _ = wire.WriteMuxReply(&b, 1, wire.ReplyParts{Status: wire.StatusNotFound})
	if bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("control: two statuses wrote one frame")
	}
}

// TestReplyMessageCutAtACharacter: a message longer than MaxReplyMsg is
// cut at a character's start, so the frame still decodes. Control: the
// byte cut the writers made before leaves a frame the decoder refuses.
func TestReplyMessageCutAtACharacter(t *testing.T) {
	msg := "x" + strings.Repeat("é", wire.MaxReplyMsg) // the cut falls inside an é
	var got bytes.Buffer
	if _, err := wire.WriteMuxReply(&got, 9, wire.ReplyParts{Status: wire.StatusInternal, Msg: msg}); err != nil {
		t.Fatal(err)
	}
	var back wire.MuxReply
	if err := wire.DecodeMuxReply(framed(t, got.Bytes()), &back); err != nil {
		t.Fatalf("reply with a long message does not decode: %v", err)
	}
	if len(back.Reply.Msg) > wire.MaxReplyMsg || !strings.HasPrefix(msg, back.Reply.Msg) || len(back.Reply.Msg) < wire.MaxReplyMsg-1 {
		t.Fatalf("message cut to %d bytes", len(back.Reply.Msg))
	}
	bad := muxFrame(t, &wire.MuxReply{ID: 9, Reply: wire.Reply{Status: wire.StatusInternal, Msg: msg[:wire.MaxReplyMsg]}})
	if err := wire.DecodeMuxReply(bad, &back); err == nil {
		t.Fatal("control: a message cut inside a character decoded")
	}
}
