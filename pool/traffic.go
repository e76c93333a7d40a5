package pool

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/wire"
)

// traffic counts the bytes of the calls one round makes: request frames
// sent (length prefix and body, exactly as written) and reply bodies
// received. libp2p's bandwidth counters lag by about a second, so a round
// counts its own frames.
type traffic struct {
	sent, received int
}

// frameLen is the size on the wire of a frame with a body of n bytes.
func frameLen(n int) int {
	var hdr [binary.MaxVarintLen64]byte
	return binary.PutUvarint(hdr[:], uint64(n)) + n
}

// countedReply decodes a reply body into v and remembers its size.
type countedReply struct {
	v wire.Validator
	n int
}

// UnmarshalCBOR records the body's size and decodes it into the wrapped
// message with the strict codec.
func (c *countedReply) UnmarshalCBOR(b []byte) error {
	c.n = len(b)
	return codec.Unmarshal(b, c.v)
}

// Validate checks the wrapped message.
func (c *countedReply) Validate() error { return c.v.Validate() }

// call is p.ep.Call that adds the call's frames to tr when tr is not nil.
// The request is encoded once, here, so counting costs no second
// encoding. Only calls that complete are counted.
func (p *Pool) call(ctx context.Context, t peer.ID, pid protocol.ID, req any, maxResp int, resp wire.Validator, tr *traffic) error {
	if tr == nil {
		return p.ep.Call(ctx, t, pid, req, maxResp, resp)
	}
	body, err := codec.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s request: %w", pid, err)
	}
	var rep *countedReply
	var into wire.Validator // stays a nil interface when resp is nil
	if resp != nil {
		rep = &countedReply{v: resp}
		into = rep
	}
	if err := p.ep.Call(ctx, t, pid, cbor.RawMessage(body), maxResp, into); err != nil {
		return err
	}
	tr.sent += frameLen(len(body))
	if rep != nil {
		tr.received += rep.n
	}
	return nil
}
