package certs

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/up-pool/up/sigverify"
)

// Position is the account key's statement "my node currently lives at peer
// ID PeerID", sequence-numbered so that a newer position supersedes an older
// one.
type Position struct {
	PeerID   []byte    // raw libp2p peer ID bytes, 1..MaxPeerIDLen bytes
	Seq      uint64    // strictly increasing per account
	IssuedAt time.Time // encoded as Unix milliseconds; finer precision is dropped
}

// SignedPosition is a Position with the account key's Ed25519 signature over
// its encoding.
type SignedPosition struct {
	Position Position
	Sig      []byte // ed25519.SignatureSize bytes
}

// MaxPeerIDLen is the longest PeerID, in bytes, a position may carry.
const MaxPeerIDLen = 128

// positionDomain prefixes every signed position payload so that the
// signature cannot be confused with one over any other message.
const positionDomain = "up/position/v1\x00"

// appendPayload appends the signed encoding of p:
// "up/position/v1\x00" || uvarint(len(PeerID)) || PeerID || uint64be(Seq) ||
// int64be(IssuedAt unix ms).
func (p Position) appendPayload(b []byte) []byte {
	b = append(b, positionDomain...)
	b = binary.AppendUvarint(b, uint64(len(p.PeerID)))
	b = append(b, p.PeerID...)
	b = binary.BigEndian.AppendUint64(b, p.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(p.IssuedAt.UnixMilli()))
	return b
}

// payloadSize is the exact length of appendPayload's output.
func (p Position) payloadSize() int {
	return len(positionDomain) + uvarintLen(uint64(len(p.PeerID))) + len(p.PeerID) + 8 + 8
}

// uvarintLen is the length of binary.AppendUvarint's encoding of x.
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// SignPosition signs p with the account key over the domain-separated,
// deterministic encoding "up/position/v1\x00" || uvarint(len(PeerID)) ||
// PeerID || uint64be(Seq) || int64be(IssuedAt unix ms). Like ed25519.Sign it
// panics if account is not ed25519.PrivateKeySize bytes. The returned
// position's IssuedAt is truncated to the millisecond, so it equals what
// UnmarshalSignedPosition will return.
func SignPosition(account ed25519.PrivateKey, p Position) SignedPosition {
	p.IssuedAt = time.UnixMilli(p.IssuedAt.UnixMilli()).UTC()
	var buf [128]byte
	msg := p.appendPayload(buf[:0])
	return SignedPosition{Position: p, Sig: ed25519.Sign(account, msg)}
}

// Verify checks that sp was signed by account. A signature that does not
// verify wraps ErrBadSignature; a PeerID outside 1..MaxPeerIDLen bytes, a
// signature of the wrong length or a bad account key wraps ErrMalformed.
func (sp SignedPosition) Verify(account ed25519.PublicKey) error {
	if len(account) != ed25519.PublicKeySize {
		return fmt.Errorf("certs: verify position: account key length %d, want %d: %w", len(account), ed25519.PublicKeySize, ErrMalformed)
	}
	if n := len(sp.Position.PeerID); n == 0 || n > MaxPeerIDLen {
		return fmt.Errorf("certs: verify position: peer ID is %d bytes, want 1..%d: %w", n, MaxPeerIDLen, ErrMalformed)
	}
	if len(sp.Sig) != ed25519.SignatureSize {
		return fmt.Errorf("certs: verify position: signature is %d bytes, want %d: %w", len(sp.Sig), ed25519.SignatureSize, ErrMalformed)
	}
	var buf [128]byte
	msg := sp.Position.appendPayload(buf[:0])
	if !sigverify.Verify(account, msg, sp.Sig) {
		return fmt.Errorf("certs: verify position seq %d: %w", sp.Position.Seq, ErrBadSignature)
	}
	return nil
}

// Marshal returns the deterministic binary encoding of sp: the signed payload
// followed by uvarint(len(Sig)) || Sig.
func (sp SignedPosition) Marshal() []byte {
	n := sp.Position.payloadSize() + uvarintLen(uint64(len(sp.Sig))) + len(sp.Sig)
	b := sp.Position.appendPayload(make([]byte, 0, n))
	b = binary.AppendUvarint(b, uint64(len(sp.Sig)))
	return append(b, sp.Sig...)
}

// readUvarint decodes a minimally encoded uvarint from b, returning the value
// and the number of bytes read, or n <= 0 if b does not start with one.
func readUvarint(b []byte) (uint64, int) {
	x, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, -1
	}
	if n > 1 && b[n-1] == 0 { // non-minimal: a trailing zero group
		return 0, -1
	}
	return x, n
}

// UnmarshalSignedPosition decodes Marshal's encoding. It requires the domain
// prefix, a minimally encoded PeerID length in 1..MaxPeerIDLen, a signature of
// exactly ed25519.SignatureSize bytes and no trailing bytes; otherwise it
// fails with ErrMalformed. It does not verify the signature. IssuedAt is
// returned in UTC.
func UnmarshalSignedPosition(b []byte) (SignedPosition, error) {
	fail := func(what string) (SignedPosition, error) {
		return SignedPosition{}, fmt.Errorf("certs: unmarshal position: %s: %w", what, ErrMalformed)
	}
	if len(b) < len(positionDomain) || string(b[:len(positionDomain)]) != positionDomain {
		return fail("missing domain prefix")
	}
	b = b[len(positionDomain):]
	idLen, n := readUvarint(b)
	if n <= 0 {
		return fail("bad peer ID length")
	}
	b = b[n:]
	if idLen == 0 || idLen > MaxPeerIDLen {
		return fail(fmt.Sprintf("peer ID is %d bytes, want 1..%d", idLen, MaxPeerIDLen))
	}
	if uint64(len(b)) < idLen+16 {
		return fail("truncated")
	}
	var sp SignedPosition
	sp.Position.PeerID = append([]byte(nil), b[:idLen]...)
	b = b[idLen:]
	sp.Position.Seq = binary.BigEndian.Uint64(b)
	sp.Position.IssuedAt = time.UnixMilli(int64(binary.BigEndian.Uint64(b[8:]))).UTC()
	b = b[16:]
	sigLen, n := readUvarint(b)
	if n <= 0 {
		return fail("bad signature length")
	}
	b = b[n:]
	if sigLen != ed25519.SignatureSize {
		return fail(fmt.Sprintf("signature is %d bytes, want %d", sigLen, ed25519.SignatureSize))
	}
	if len(b) < ed25519.SignatureSize {
		return fail("truncated signature")
	}
	if len(b) > ed25519.SignatureSize {
		return fail(fmt.Sprintf("%d trailing bytes", len(b)-ed25519.SignatureSize))
	}
	sp.Sig = append([]byte(nil), b...)
	return sp, nil
}

// Supersedes reports whether a is newer than b for the same account
// (a.Seq > b.Seq).
func (a Position) Supersedes(b Position) bool {
	return a.Seq > b.Seq
}
