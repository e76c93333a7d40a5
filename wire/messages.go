package wire

import (
	"fmt"
	"github.com/up-pool/up/codec"

	"github.com/fxamacker/cbor/v2"
)

// Status is the outcome code of a Reply.
type Status uint16

// Reply statuses. A refused peer gets StatusUnauthorized with a reason.
const (
	StatusOK Status = iota
	StatusBadRequest
	StatusUnauthorized
	StatusNotFound
	StatusRateLimited
	StatusInternal
	StatusMoved // the item belongs to another node now; Msg names it
	StatusGone  // the job was collected and deleted; it is not stored again
	StatusQuota // the project is over its storage quota on this node
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusBadRequest:
		return "bad request"
	case StatusUnauthorized:
		return "unauthorized"
	case StatusNotFound:
		return "not found"
	case StatusRateLimited:
		return "rate limited"
	case StatusInternal:
		return "internal error"
	case StatusMoved:
		return "moved"
	case StatusGone:
		return "gone"
	case StatusQuota:
		return "over quota"
	}
	return fmt.Sprintf("status %d", uint16(s))
}

// Reply is the one response frame of every /up/ request: a status, a short
// human-readable message when the status is not OK, the encoded body, and,
// in a node's reply to a node, the answering node's load (piggy-backed so
// nodes learn of hot spots from ordinary traffic; nil otherwise).
type Reply struct {
	_      struct{} `cbor:",toarray"`
	Status Status
	Msg    string
	Body   cbor.RawMessage
	Load   *LoadInfo

	// bodyChecked: the reader already checked Body as Validate does
	// (DecodeMuxReply).
	bodyChecked bool
}

// Validate bounds a decoded Reply. Its body must be CBOR the encoder would
// write too: decoding checks only that it is well-formed, which lets
// through built-in tags with the wrong content (an epoch time holding a
// byte string), so such a Reply could not be encoded again.
func (r *Reply) Validate() error {
	if len(r.Msg) > MaxReplyMsg {
		return fmt.Errorf("reply message of %d bytes: %w", len(r.Msg), ErrMalformed)
	}
	if len(r.Body) > 0 && !r.bodyChecked {
		if err := codec.CheckRaw(r.Body); err != nil {
			return fmt.Errorf("reply body: %w: %v", ErrMalformed, err)
		}
	}
	if r.Load != nil {
		if err := r.Load.Validate(); err != nil {
			return fmt.Errorf("reply load: %w", err)
		}
	}
	return nil
}

// Error is a non-OK Reply seen by the caller.
type Error struct {
	Status Status
	Msg    string
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return e.Status.String()
	}
	return e.Status.String() + ": " + e.Msg
}

// HelloVersion is the version of the Hello message this code speaks.
const HelloVersion = 1

// Hello is the admission message: the sender's certificate and the signed
// record binding its libp2p peer ID to the certificate's key. The secure
// channel already proves the peer ID, so no further challenge is needed.
type Hello struct {
	_         struct{} `cbor:",toarray"`
	Version   uint16
	Cert      []byte // DER X.509 certificate
	Position  []byte // certs.SignedPosition, marshalled
	CRLNumber uint64 // number of the newest CA revocation list the sender holds; 0 = none
}

// Hello field bounds.
const (
	MaxCertBytes     = 16 << 10
	MaxPositionBytes = 256
)

// Validate bounds a decoded Hello.
func (h *Hello) Validate() error {
	if h.Version != HelloVersion {
		return fmt.Errorf("hello version %d, want %d: %w", h.Version, HelloVersion, ErrMalformed)
	}
	if len(h.Cert) == 0 || len(h.Cert) > MaxCertBytes {
		return fmt.Errorf("hello certificate of %d bytes: %w", len(h.Cert), ErrMalformed)
	}
	if len(h.Position) == 0 || len(h.Position) > MaxPositionBytes {
		return fmt.Errorf("hello position record of %d bytes: %w", len(h.Position), ErrMalformed)
	}
	return nil
}

// NearRequest asks for the Count known peers nearest to the raw 256-bit
// position Target (not a key: it is not hashed again).
type NearRequest struct {
	_      struct{} `cbor:",toarray"`
	Target []byte
	Count  uint16
	// Live asks the node to leave out the peers it saw fail (a claimer
	// refreshing a stale replica set); walks and crawls ask for the whole
	// routing table's view.
	Live bool
}

// MaxNearCount bounds NearRequest.Count.
const MaxNearCount = 64

// Validate bounds a decoded NearRequest.
func (r *NearRequest) Validate() error {
	if len(r.Target) != 32 {
		return fmt.Errorf("near target of %d bytes, want 32: %w", len(r.Target), ErrMalformed)
	}
	if r.Count == 0 || r.Count > MaxNearCount {
		return fmt.Errorf("near count %d, want 1..%d: %w", r.Count, MaxNearCount, ErrMalformed)
	}
	return nil
}

// PeerRecord is a peer and the multiaddrs it may be reached at, as bytes.
type PeerRecord struct {
	_     struct{} `cbor:",toarray"`
	ID    []byte
	Addrs [][]byte
}

// PeerRecord bounds.
const (
	MaxPeerIDBytes = 128
	MaxAddrs       = 8
	MaxAddrBytes   = 256
)

// Validate bounds a decoded PeerRecord.
func (p *PeerRecord) Validate() error {
	if len(p.ID) == 0 || len(p.ID) > MaxPeerIDBytes {
		return fmt.Errorf("peer id of %d bytes: %w", len(p.ID), ErrMalformed)
	}
	if len(p.Addrs) > MaxAddrs {
		return fmt.Errorf("%d addresses for one peer: %w", len(p.Addrs), ErrMalformed)
	}
	for _, a := range p.Addrs {
		if len(a) == 0 || len(a) > MaxAddrBytes {
			return fmt.Errorf("address of %d bytes: %w", len(a), ErrMalformed)
		}
	}
	return nil
}

// NearResponse lists peers nearest first.
type NearResponse struct {
	_     struct{} `cbor:",toarray"`
	Peers []PeerRecord
}

// Validate bounds a decoded NearResponse.
func (r *NearResponse) Validate() error {
	if len(r.Peers) > MaxNearCount {
		return fmt.Errorf("near response with %d peers: %w", len(r.Peers), ErrMalformed)
	}
	for i := range r.Peers {
		if err := r.Peers[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}

// CRLRequest asks for the newest revocation list the peer holds.
type CRLRequest struct {
	_ struct{} `cbor:",toarray"`
}

// Validate accepts every CRLRequest.
func (r *CRLRequest) Validate() error { return nil }

// CRLResponse carries a DER revocation list; Number 0 and no DER when the
// peer holds none.
type CRLResponse struct {
	_      struct{} `cbor:",toarray"`
	Number uint64
	DER    []byte
}

// MaxCRLBytes bounds a revocation list on the wire.
const MaxCRLBytes = 1 << 20

// Validate bounds a decoded CRLResponse.
func (r *CRLResponse) Validate() error {
	if len(r.DER) > MaxCRLBytes {
		return fmt.Errorf("revocation list of %d bytes: %w", len(r.DER), ErrMalformed)
	}
	return nil
}

// Validator is a decoded message that can check its own bounds.
type Validator interface{ Validate() error }

// Decode unmarshals b into v and validates it.
func Decode(b []byte, v Validator) error {
	if err := Unmarshal(b, v); err != nil {
		return err
	}
	return v.Validate()
}

// Ping is the empty request and reply of ProtoPing.
type Ping struct {
	_ struct{} `cbor:",toarray"`
}

// Validate accepts every Ping.
func (*Ping) Validate() error { return nil }
