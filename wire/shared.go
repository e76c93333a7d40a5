package wire

import (
	"fmt"

	"github.com/up-pool/up/codec"
)

// Signed claim replies with what their signers share written once
// (SharedReplies). A signed reply (claim.Signed) is its statement, the
// node's certificate, its position record, the signature and, for a
// reply signed in a batch, the statement's path to the batch's root: the
// replies a node signs together (the jobs of one many-claim) repeat the
// certificate, the position record and the signature, ~600 of their
// ~850 bytes, in every reply. A many-job message carries them once per
// signature and each reply as its statement, its path and the index of
// its signature; the receiver rebuilds each reply byte for byte
// (Replies) and checks it as before: nothing is trusted for being
// shared, and a forged shared part fails every reply that names it, as
// it would have failed each copy.

// Bounds of shared replies.
const (
	// MaxSharedReplies is the most replies one message carries: a
	// confirm of MaxClaimMany jobs with MaxReplies replies each.
	MaxSharedReplies = MaxClaimMany * MaxReplies
	// maxSharedField bounds a certificate, position record, signature,
	// statement or path (each well under a reply's bound).
	maxSharedField = MaxReplyBytes
)

// ReplySigner is what the replies of one signature share: the node's
// certificate (DER), its position record and the signature (over one
// statement, or over a batch's root).
type ReplySigner struct {
	_        struct{} `cbor:",toarray"`
	Cert     []byte
	Position []byte
	PeerSig  []byte
}

// SharedReply is one reply: its statement (as signed), its batch path
// (empty: the statement is signed alone) and the index of its signer in
// SharedReplies.Signers.
type SharedReply struct {
	_         struct{} `cbor:",toarray"`
	Statement []byte
	Path      []byte
	Signer    uint16
}

// SharedReplies is a list of signed replies, each signature's shared
// parts once.
type SharedReplies struct {
	_       struct{} `cbor:",toarray"`
	Signers []ReplySigner
	Replies []SharedReply
}

// ShareReplies writes replies (claim.Signed, encoded in its canonical
// layouts: four byte strings, or five with a non-empty path) as shared
// replies, in their order. A reply in any other encoding is an error: the
// caller sends such replies as they are (the many-job protocols of
// version 1).
func ShareReplies(replies [][]byte) (SharedReplies, error) {
	var s SharedReplies
	if len(replies) > MaxSharedReplies {
		return s, fmt.Errorf("share %d replies: at most %d", len(replies), MaxSharedReplies)
	}
	index := make(map[string]uint16, 8)
	s.Replies = make([]SharedReply, len(replies))
	for i, b := range replies {
		var st, cert, pos, sig, path []byte
		n, ok := codec.ReadByteStringArray(b, 4, &st, &cert, &pos, &sig, &path)
		if !ok || (n == 5 && len(path) == 0) {
			return SharedReplies{}, fmt.Errorf("share reply %d: not a signed reply in its canonical layout", i)
		}
		key := string(cert) + "\x00" + string(pos) + "\x00" + string(sig)
		at, seen := index[key]
		if !seen {
			at = uint16(len(s.Signers))
			index[key] = at
			s.Signers = append(s.Signers, ReplySigner{Cert: cert, Position: pos, PeerSig: sig})
		}
		s.Replies[i] = SharedReply{Statement: st, Path: path, Signer: at}
	}
	return s, nil
}

// Validate bounds decoded shared replies: at most MaxSharedReplies, no
// more signers than replies, each signer named by some reply and every
// index within the signers, every field within its bound and the
// fields a reply needs non-empty.
func (s *SharedReplies) Validate() error {
	if len(s.Replies) > MaxSharedReplies || len(s.Signers) > len(s.Replies) {
		return fmt.Errorf("%d shared replies of %d signers: %w", len(s.Replies), len(s.Signers), ErrMalformed)
	}
	named := make([]bool, len(s.Signers))
	for i := range s.Replies {
		r := &s.Replies[i]
		if int(r.Signer) >= len(s.Signers) || len(r.Statement) == 0 || len(r.Statement) > maxSharedField || len(r.Path) > maxSharedField {
			return fmt.Errorf("shared reply %d (signer %d of %d, statement of %d bytes, path of %d): %w",
				i, r.Signer, len(s.Signers), len(r.Statement), len(r.Path), ErrMalformed)
		}
		named[r.Signer] = true
	}
	for i := range s.Signers {
		g := &s.Signers[i]
		if !named[i] || len(g.Cert) == 0 || len(g.Position) == 0 || len(g.PeerSig) == 0 ||
			len(g.Cert) > maxSharedField || len(g.Position) > maxSharedField || len(g.PeerSig) > maxSharedField {
			return fmt.Errorf("shared signer %d (named %v; certificate %d, position %d, signature %d bytes): %w",
				i, named[i], len(g.Cert), len(g.Position), len(g.PeerSig), ErrMalformed)
		}
	}
	return nil
}

// Expand rebuilds each reply in the canonical layout ShareReplies read
// (the bytes that were shared), in order. s must be valid (Validate);
// a rebuilt reply over MaxReplyBytes is an error.
func (s *SharedReplies) Expand() ([][]byte, error) {
	out := make([][]byte, len(s.Replies))
	for i := range s.Replies {
		r := &s.Replies[i]
		g := &s.Signers[r.Signer]
		size := len(r.Statement) + len(g.Cert) + len(g.Position) + len(g.PeerSig) + len(r.Path) + 5*9 + 1
		b := make([]byte, 0, size)
		if len(r.Path) == 0 {
			b = append(b, 0x84)
		} else {
			b = append(b, 0x85)
		}
		b = codec.AppendBytes(b, r.Statement)
		b = codec.AppendBytes(b, g.Cert)
		b = codec.AppendBytes(b, g.Position)
		b = codec.AppendBytes(b, g.PeerSig)
		if len(r.Path) > 0 {
			b = codec.AppendBytes(b, r.Path)
		}
		if len(b) > MaxReplyBytes {
			return nil, fmt.Errorf("shared reply %d rebuilt to %d bytes: %w", i, len(b), ErrMalformed)
		}
		out[i] = b
	}
	return out, nil
}
