package wire

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"

	"github.com/up-pool/up/codec"
)

// Mux frames are read and written by hand in their canonical layouts:
// every RPC on a mux stream crosses one of each, and the codec copied a
// request's or reply's body out of its frame (RawMessage) and, on the
// way out, encoded a reply's body and then copied and re-checked it into
// the frame — 15 % of the bytes `up bench` allocated. The whole frame is
// still checked as the decoder would (codec.Wellformed) and a frame in
// another layout goes to the codec; FuzzMuxFrames holds both directions
// to the codec's.

// DecodeMuxRequest reads a MuxRequest frame body into req; req.Body
// aliases frame.
func DecodeMuxRequest(frame []byte, req *MuxRequest) error {
	if err := codec.Wellformed(frame); err != nil {
		return err
	}
	if len(frame) > 0 && frame[0] == 0x83 {
		id, rest, ok := codec.ReadHead(frame[1:], 0)
		var proto string
		if ok {
			proto, rest, ok = codec.ReadText(rest)
		}
		if ok && len(rest) > 0 && !selfDescribed(rest) && codec.CheckRaw(rest) == nil {
			*req = MuxRequest{ID: id, Proto: proto, Body: cbor.RawMessage(rest)}
			return nil
		}
	}
	return codec.Unmarshal(frame, req)
}

// DecodeMuxReply reads a MuxReply frame body into rep; rep.Reply.Body
// aliases frame.
func DecodeMuxReply(frame []byte, rep *MuxReply) error {
	if err := codec.Wellformed(frame); err != nil {
		return err
	}
	if r, ok := parseMuxReply(frame); ok {
		*rep = r
		return nil
	}
	return codec.Unmarshal(frame, rep)
}

// selfDescribed reports a body that starts with CBOR's self-describe tag
// (55799), which the codec strips from a RawMessage: such a frame goes
// to the codec.
func selfDescribed(body []byte) bool {
	return len(body) >= 3 && body[0] == 0xd9 && body[1] == 0xd9 && body[2] == 0xf7
}

// parseMuxReply reads [ID, [Status, Msg, Body, Load]] with shortest
// heads, Load null or decoded by the codec.
func parseMuxReply(b []byte) (MuxReply, bool) {
	var r MuxReply
	if len(b) < 2 || b[0] != 0x82 {
		return r, false
	}
	id, rest, ok := codec.ReadHead(b[1:], 0)
	if !ok || len(rest) == 0 || rest[0] != 0x84 {
		return r, false
	}
	status, rest, ok := codec.ReadHead(rest[1:], 0)
	if !ok || status > 0xffff {
		return r, false
	}
	msg, rest, ok := codec.ReadText(rest)
	if !ok {
		return r, false
	}
	body, rest, ok := codec.ReadItem(rest)
	if !ok || selfDescribed(body) || codec.CheckRaw(body) != nil { // built-in tags' content, as the decoder checks
		return r, false
	}
	r = MuxReply{ID: id, Reply: Reply{Status: Status(status), Msg: msg, Body: cbor.RawMessage(body), bodyChecked: true}}
	switch {
	case len(rest) == 1 && rest[0] == 0xf6:
	case len(rest) > 0 && rest[0] == 0x86:
		var load LoadInfo
		if codec.Unmarshal(rest, &load) != nil {
			return MuxReply{}, false
		}
		r.Reply.Load = &load
	default:
		return MuxReply{}, false
	}
	return r, true
}

// ReplyParts is a reply before its body is encoded: Body is encoded
// straight into the frame (nil: none).
type ReplyParts struct {
	Status Status
	Msg    string
	Body   any
	Load   *LoadInfo
}

// WriteMuxRequest writes MuxRequest{id, proto, body} as one frame; body
// is an encoding of the caller's (Marshal's), taken as it is.
func WriteMuxRequest(w io.Writer, id uint64, proto string, body []byte) error {
	return codec.WriteFrameWith(w, func(buf *bytes.Buffer) error {
		codec.AppendHead(buf, 4, 3)
		codec.AppendHead(buf, 0, id)
		codec.AppendText(buf, proto)
		buf.Write(body)
		return nil
	})
}

// WriteMuxReply writes [id, reply] as one frame, the reply's body
// encoded in place. When the body does not encode, the frame carries
// StatusInternal and the error instead, and bodyErr is that error; err
// is the write's.
func WriteMuxReply(w io.Writer, id uint64, r ReplyParts) (bodyErr, err error) {
	f, bodyErr := EncodeMuxReply(id, r)
	defer f.Release()
	return bodyErr, f.Write(w)
}

// EncodeMuxReply encodes [id, reply] as a frame to write later (so a
// writer shared by several handlers is held only for the write); bodyErr
// as WriteMuxReply's. The caller releases the frame.
func EncodeMuxReply(id uint64, r ReplyParts) (f *codec.Frame, bodyErr error) {
	f = codec.NewFrame()
	codec.AppendHead(f.Buf(), 4, 2)
	codec.AppendHead(f.Buf(), 0, id)
	return f, appendReply(f.Buf(), r)
}

// TruncateMsg cuts a reply message to MaxReplyMsg bytes at a character's
// start: a cut through a character would leave a text string the
// decoder refuses, and with it the whole frame (on a mux stream, every
// call waiting on it).
func TruncateMsg(msg string) string {
	if len(msg) <= MaxReplyMsg {
		return msg
	}
	end := MaxReplyMsg
	for end > 0 && !utf8.RuneStart(msg[end]) {
		end--
	}
	return strings.ToValidUTF8(msg[:end], "")
}

// WriteReply writes a Reply as one frame, its body encoded in place (see
// WriteMuxReply).
func WriteReply(w io.Writer, r ReplyParts) (bodyErr, err error) {
	err = codec.WriteFrameWith(w, func(buf *bytes.Buffer) error {
		bodyErr = appendReply(buf, r)
		return nil
	})
	return bodyErr, err
}

// appendReply appends r encoded as a Reply (Marshal's bytes); a body
// that does not encode makes it a StatusInternal reply with the error,
// returned too.
func appendReply(buf *bytes.Buffer, r ReplyParts) error {
	r.Msg = TruncateMsg(r.Msg)
	mark := buf.Len()
	codec.AppendHead(buf, 4, 4)
	codec.AppendHead(buf, 0, uint64(r.Status))
	codec.AppendText(buf, r.Msg)
	var bodyErr error
	if r.Body == nil {
		codec.AppendNull(buf)
	} else if bodyErr = codec.MarshalTo(buf, r.Body); bodyErr != nil {
		buf.Truncate(mark)
		msg := TruncateMsg(bodyErr.Error())
		codec.AppendHead(buf, 4, 4)
		codec.AppendHead(buf, 0, uint64(StatusInternal))
		codec.AppendText(buf, msg)
		codec.AppendNull(buf)
		r.Load = nil
	}
	if r.Load == nil {
		codec.AppendNull(buf)
	} else if err := codec.MarshalTo(buf, r.Load); err != nil {
		codec.AppendNull(buf) // a LoadInfo always encodes
	}
	return bodyErr
}
