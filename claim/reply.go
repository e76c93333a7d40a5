package claim

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/sigverify"
)

// Kind is what a node answers a claim request.
type Kind uint8

// Reply kinds.
const (
	Granted  Kind = 1 // the job is temporarily claimed for the client
	Denied   Kind = 2 // claimed by another client, or no longer ready
	DontCare Kind = 3 // the node does not hold the job
	// Accepted answers a confirm: the node made the claim (Job, Client,
	// Start) permanent. A quorum of them is the claim's certificate.
	Accepted Kind = 4
	// Ticket is not a claim reply: one of the client's record nodes (its
	// credit key's closest) lets the client claim the job within its
	// quota of jobs in progress (package quota). Replicas that require
	// tickets check it before they grant.
	Ticket Kind = 5
)

func (k Kind) String() string {
	switch k {
	case Ticket:
		return "ticket"
	case Granted:
		return "granted"
	case Denied:
		return "denied"
	case DontCare:
		return "don't care"
	case Accepted:
		return "accepted"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Statement is a node's reply to a claim request, as it signs it.
type Statement struct {
	_      struct{} `cbor:",toarray"`
	Kind   Kind
	Job    []byte // job key
	Client []byte // the client's account public key
	Node   []byte // the replying node's peer ID
	At     int64  // reply time, Unix ms
	// Start is, in an acceptance, the accepted claim's start; in a grant,
	// the start of the last claim this node saw end on the job (0 when
	// none), which a new claim's start must exceed (CheckConfirm): a client
	// whose clock is behind the ended claim's client's starts after it
	// rather than be refused. 0 in denials and don't-cares.
	Start int64
	// Busy, in a denial only, says the job is free but another client's
	// claim attempt holds its temporary claim here: that attempt may yet
	// win, and a client denied so waits for it to end before it asks the
	// next node (Claimer), instead of racing it for the rest of the
	// quorum where both would lose.
	Busy bool
	// Place, in a ticket only, is the place key of the job
	// (job.PlaceKey) when it is not the job's key: the nodes a claim
	// with the ticket asks refuse it unless it is the job's place they
	// hold, so the record node that gave it knows where the job's
	// replicas are (its audit asks them). Encoded only when set: a
	// statement without it keeps its seven elements.
	Place []byte
}

// statementV1 is a statement without a place, encoded as every
// statement was before places: seven elements.
type statementV1 struct {
	_      struct{} `cbor:",toarray"`
	Kind   Kind
	Job    []byte
	Client []byte
	Node   []byte
	At     int64
	Start  int64
	Busy   bool
}

// statementV1Fields is its element count (codec.ArrayLen): the layout is
// told by the count, without a failed decode of the other.
var statementV1Fields = codec.Fields(statementV1{})

// Encode is the statement's canonical encoding, which its node signs.
func (st *Statement) Encode() ([]byte, error) {
	if len(st.Place) == 0 {
		return codec.Marshal(&statementV1{Kind: st.Kind, Job: st.Job, Client: st.Client, Node: st.Node, At: st.At, Start: st.Start, Busy: st.Busy})
	}
	return codec.Marshal(st)
}

// decodeStatement parses a statement in either layout.
func decodeStatement(b []byte) (Statement, error) {
	var v1 statementV1
	if codec.ArrayLen(b) == statementV1Fields && codec.Unmarshal(b, &v1) == nil {
		return Statement{Kind: v1.Kind, Job: v1.Job, Client: v1.Client, Node: v1.Node, At: v1.At, Start: v1.Start, Busy: v1.Busy}, nil
	}
	var st Statement
	err := codec.Unmarshal(b, &st)
	return st, err
}

// Signed is a Statement signed by the node it names, with what binds that
// node to the CA so any node can check it: Cert is the node's certificate
// (its account key), Position the node's position record signed by that
// account key ("my node lives at peer ID Node"), and PeerSig the message
// signed by that peer ID's own libp2p key. CA → certificate → account key
// → position record → peer key → statement: one signature per statement
// (the account key signs the position record once, verified once per
// verifier and cached). An account key can sign a position record naming
// any peer ID, but only the holder of the peer's key can sign as it.
//
// A node answering several jobs at once signs them as a batch
// (SignBatch): PeerSig then covers the batch's Merkle root, and Path is
// the statement's inclusion path (job.BatchPath) to it; a verifier folds
// the path with a few hashes and verifies each root's signature once.
type Signed struct {
	_         struct{} `cbor:",toarray"`
	Statement []byte
	Cert      []byte // node certificate, DER
	Position  []byte // certs.SignedPosition, encoded
	PeerSig   []byte // by the libp2p key of Statement.Node
	// Path is the statement's encoded job.BatchPath when PeerSig signs a
	// batch of statements (nil: it signs this one). Encoded only when
	// set: a reply signed alone keeps its four elements.
	Path []byte
}

// signedV1 is a reply signed alone, encoded as every reply was before
// batches: four elements.
type signedV1 struct {
	_         struct{} `cbor:",toarray"`
	Statement []byte
	Cert      []byte
	Position  []byte
	PeerSig   []byte
}

// signedV1Fields is its element count (codec.ArrayLen): the layout is
// told by the count, without a failed decode of the other.
var signedV1Fields = codec.Fields(signedV1{})

// Encode is the reply's encoding: four elements when signed alone.
func (s *Signed) Encode() ([]byte, error) {
	if len(s.Path) == 0 {
		return codec.Marshal(&signedV1{Statement: s.Statement, Cert: s.Cert, Position: s.Position, PeerSig: s.PeerSig})
	}
	return codec.Marshal(s)
}

// Bounds of a signed reply.
const (
	MaxSignedReply = 20 << 10
	maxIDLen       = 128
	maxPositionLen = 512
	maxPeerSigLen  = 256
	replyDomain    = "up/claim-reply/v2\x00"
	// replyBatchDomain is what a batch of replies' root is signed under
	// (job.SignBatchWith): apart from a single reply's, so that no
	// statement can pass for a root or a root for a statement.
	replyBatchDomain = "up/claim-replies/v1\x00"
	// MaxReplyBatch is the most statements one batch signature covers:
	// the jobs of one place a claim request may name, and more.
	MaxReplyBatch = 1024
	maxPathLen    = 16 + 10*(32+2) + 8 // a job.BatchPath of MaxReplyBatch leaves
)

// ErrMalformed reports a reply that does not decode or breaks a bound.
var ErrMalformed = errors.New("malformed claim reply")

// Sign signs a statement, through peerSign, with the key of the node's
// peer ID; cert is the node's certificate and position its position
// record signed by the certificate's account key.
func Sign(st Statement, cert, position []byte, peerSign func(msg []byte) ([]byte, error)) ([]byte, error) {
	b, err := st.Encode()
	if err != nil {
		return nil, err
	}
	msg := append([]byte(replyDomain), b...)
	psig, err := peerSign(msg)
	if err != nil {
		return nil, fmt.Errorf("sign claim reply with the peer key: %w", err)
	}
	s := Signed{Statement: b, Cert: cert, Position: position, PeerSig: psig}
	return s.Encode()
}

// SignBatch signs statements (at most MaxReplyBatch) under one signature
// of the node's peer key over their Merkle root: each returned reply
// carries its statement, cert, position, the root's signature and its
// path. One statement is signed alone (Sign). The statements must all be
// the node's own (one Node), as each reply's Position binds it.
func SignBatch(sts []Statement, cert, position []byte, peerSign func(msg []byte) ([]byte, error)) ([][]byte, error) {
	switch n := len(sts); {
	case n == 0:
		return nil, nil
	case n == 1:
		b, err := Sign(sts[0], cert, position, peerSign)
		return [][]byte{b}, err
	case n > MaxReplyBatch:
		return nil, fmt.Errorf("claim replies: batch of %d statements, at most %d", n, MaxReplyBatch)
	}
	leaves := make([][]byte, len(sts))
	for i := range sts {
		if !bytes.Equal(sts[i].Node, sts[0].Node) {
			return nil, fmt.Errorf("claim replies: a batch of two nodes' statements")
		}
		b, err := sts[i].Encode()
		if err != nil {
			return nil, err
		}
		leaves[i] = b
	}
	psig, paths, err := job.SignBatchWith(replyBatchDomain, leaves, peerSign)
	if err != nil {
		return nil, fmt.Errorf("sign claim replies with the peer key: %w", err)
	}
	out := make([][]byte, len(sts))
	for i := range sts {
		s := Signed{Statement: leaves[i], Cert: cert, Position: position, PeerSig: psig, Path: paths[i]}
		if out[i], err = s.Encode(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeSigned parses a signed reply in either layout.
func decodeSigned(b []byte) (Signed, error) {
	var v1 signedV1
	if codec.ArrayLen(b) == signedV1Fields && codec.Unmarshal(b, &v1) == nil {
		return Signed{Statement: v1.Statement, Cert: v1.Cert, Position: v1.Position, PeerSig: v1.PeerSig}, nil
	}
	var s Signed
	if err := codec.Unmarshal(b, &s); err != nil {
		return s, err
	}
	if len(s.Path) == 0 {
		return s, errors.New("a batch layout without a path")
	}
	return s, nil
}

// Decode parses a signed reply without checking its signature. The
// statement must be canonically encoded: one statement, one encoding.
func Decode(b []byte) (*Signed, *Statement, error) {
	if len(b) > MaxSignedReply {
		return nil, nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	s, st, canonical := decodeCanonical(b)
	if !canonical {
		var err error
		if s, err = decodeSigned(b); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if st, err = decodeStatement(s.Statement); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	}
	if st.Kind < Granted || st.Kind > Ticket || (st.Kind == Accepted && st.Start <= 0) || (st.Kind != Accepted && st.Kind != Granted && st.Start != 0) || st.Start < 0 ||
		(st.Busy && st.Kind != Denied) || len(st.Job) == 0 || len(st.Job) > maxIDLen ||
		len(st.Client) != ed25519.PublicKeySize || len(st.Node) == 0 || len(st.Node) > maxIDLen ||
		(len(st.Place) > 0 && st.Kind != Ticket) || len(st.Place) > maxIDLen ||
		len(s.Cert) == 0 ||
		len(s.Position) == 0 || len(s.Position) > maxPositionLen || len(s.PeerSig) == 0 || len(s.PeerSig) > maxPeerSigLen ||
		len(s.Path) > maxPathLen {
		return nil, nil, fmt.Errorf("%w: fields out of bounds", ErrMalformed)
	}
	if canonical {
		return &s, &st, nil
	}
	if re, err := st.Encode(); err != nil || !bytes.Equal(re, s.Statement) {
		return nil, nil, fmt.Errorf("%w: statement not canonically encoded", ErrMalformed)
	}
	return &s, &st, nil
}

// ErrBadSignature reports a reply whose signature does not verify.
var ErrBadSignature = errors.New("claim reply: bad signature")

// Verify checks PeerSig with pub, the Ed25519 public key of the peer ID
// the statement names (callers bind that peer to a certificate through
// Position themselves).
func (s *Signed) Verify(pub ed25519.PublicKey) error {
	msg, err := s.Message()
	if err != nil {
		return err
	}
	if !sigverify.Verify(pub, msg, s.PeerSig) {
		return ErrBadSignature
	}
	return nil
}

// Message is what the node signed: the statement under the reply domain;
// for a reply signed in a batch, the batch's root under the batch domain,
// reached by folding Path from the statement's leaf. A verifier that
// checks many replies at once checks PeerSig over it (replies of one
// batch share it: verify it once). An error wraps ErrMalformed (a path
// out of its bounds) or ErrBadSignature (one that leads nowhere).
func (s *Signed) Message() ([]byte, error) {
	if len(s.Path) == 0 {
		return append([]byte(replyDomain), s.Statement...), nil
	}
	msg, err := job.BatchMessage(replyBatchDomain, s.Statement, s.Path)
	switch {
	case errors.Is(err, job.ErrMalformed):
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return msg, nil
}
