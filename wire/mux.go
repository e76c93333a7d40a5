package wire

import (
	"fmt"
	"strings"

	"github.com/fxamacker/cbor/v2"
)

// ProtoMux carries many requests of the other /up/ protocols, and their
// replies, on one long-lived stream from a caller to a callee, so an RPC
// costs one frame each way instead of a stream's opening, negotiation and
// closing. Requests are answered in any order; the ID pairs them.
const ProtoMux = "/up/mux/1.0.0"

// Mux bounds, in bytes.
const (
	// MaxMuxProto bounds the protocol name of a multiplexed request.
	MaxMuxProto = 64
	// MaxMuxRequest bounds the body of a multiplexed request; larger
	// requests take a stream of their own.
	MaxMuxRequest = 256 << 10
	// MaxMuxRequestFrame bounds a whole multiplexed request frame.
	MaxMuxRequestFrame = MaxMuxRequest + 1024
)

// MuxRequest is one request on a ProtoMux stream: its caller-chosen ID,
// the protocol it is a request of, and the request frame's body.
type MuxRequest struct {
	_     struct{} `cbor:",toarray"`
	ID    uint64
	Proto string
	Body  cbor.RawMessage
}

// Validate bounds a decoded MuxRequest.
func (r *MuxRequest) Validate() error {
	switch {
	case len(r.Proto) == 0 || len(r.Proto) > MaxMuxProto || !strings.HasPrefix(r.Proto, "/up/"):
		return fmt.Errorf("mux request protocol %q: %w", r.Proto, ErrMalformed)
	case r.Proto == ProtoMux || r.Proto == ProtoHello:
		return fmt.Errorf("mux request of %s: %w", r.Proto, ErrMalformed)
	case len(r.Body) == 0 || len(r.Body) > MaxMuxRequest:
		return fmt.Errorf("mux request body of %d bytes: %w", len(r.Body), ErrMalformed)
	}
	return nil
}

// MuxReply is the reply to the MuxRequest of the same ID.
type MuxReply struct {
	_     struct{} `cbor:",toarray"`
	ID    uint64
	Reply Reply
}

// Validate bounds a decoded MuxReply.
func (r *MuxReply) Validate() error { return r.Reply.Validate() }
