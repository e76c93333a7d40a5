package result

import (
	"bytes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"io"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/curve25519"

	"github.com/up-pool/up/codec"
)

// A session seals many results of one client to one project under one key
// agreement, where Seal (nacl/box.SealAnonymous) makes one per result — an
// X25519 key pair and an X25519 agreement for the client, an agreement
// for the project, and an inner Ed25519 signature to make and verify.
//
// The client makes an ephemeral X25519 key pair for the project's result
// key and signs its public half once (the note: SessionNoteMessage); the
// session key is HKDF-SHA256 of the agreement, bound to both public keys
// and the client's. Each result is sealed with XChaCha20-Poly1305 under
// it (a random 24-byte nonce), the job and the client as associated
// data, and carries no inner signature:
//
//	Sealed = sessionMagic ‖ ephemeral public key (32) ‖ note signature (64)
//	         ‖ nonce (24) ‖ ciphertext of the inner record
//
// Who may lie, and what is checked: the nodes carry Sealed as before
// (the outer signature covers its hash) and can neither read it (the key
// needs the project's private key or the client's ephemeral one) nor
// alter it (the AEAD tag). Another client that copies a session's sealed
// bytes into its own envelope is refused: the note must verify under the
// envelope's client key, and the associated data names the client and the
// job, so the bytes open for no other client and no other job. The
// project verifies the note once per session (it caches the session's
// key by client and ephemeral key, only after the note verified) and
// knows the record came from the client, the only other holder of the
// key. What is lost is a signature the project could show a third party
// for one result: nothing in U.P. uses one (credit is the project's own
// receipt). A client's ephemeral key lives for one session (Session's
// rotation is the caller's: client rotates hourly and every
// SessionMaxResults); a leaked one exposes that session's results only.
//
// A record sealed by Seal begins with an ephemeral public key: one that
// begins with sessionMagic (2⁻³² by chance) and whose note then fails is
// opened as Seal's (OpenSealed tries both), so the formats never clash.

// sessionMagic begins a session's sealed bytes.
const sessionMagic = "UPs1"

// Session sealed layout sizes.
const (
	sessionNonceSize = chacha20poly1305.NonceSizeX
	sessionHeader    = len(sessionMagic) + 32 + ed25519.SignatureSize + sessionNonceSize
	// SessionOverhead is what a session adds to an inner record's size.
	SessionOverhead = sessionHeader + chacha20poly1305.Overhead
)

// SessionMaxResults is how many results a client seals under one session
// before it makes another (random nonces of 24 bytes would allow far
// more; this bounds what one leaked ephemeral key exposes).
const SessionMaxResults = 100_000

const (
	sessionNoteDomain = "up/result-session-note/v1\x00"
	sessionKeyDomain  = "up/result-session-key/v1\x00"
	sessionADDomain   = "up/result-session/v1\x00"
)

// Session is a client's key for sealing results to one project (see
// above). Safe for concurrent use: it holds no state a seal changes.
type Session struct {
	eph     [32]byte // public
	note    []byte   // the client's signature of SessionNoteMessage
	aead    cipher.AEAD
	client  ed25519.PublicKey
	project [32]byte
}

// NewSession makes a session of the client's key for the project's
// result public key, its ephemeral key read from rnd (crypto/rand's
// Reader, say).
func NewSession(clientKey ed25519.PrivateKey, projectKey []byte, rnd io.Reader) (*Session, error) {
	if len(projectKey) != 32 {
		return nil, fmt.Errorf("%w: project result key of %d bytes", ErrMalformed, len(projectKey))
	}
	priv := make([]byte, 32)
	if _, err := io.ReadFull(rnd, priv); err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	s := &Session{client: clientKey.Public().(ed25519.PublicKey)}
	copy(s.project[:], projectKey)
	eph, err := curve25519.X25519(priv, curve25519.Basepoint)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	copy(s.eph[:], eph)
	shared, err := curve25519.X25519(priv, projectKey)
	if err != nil {
		return nil, fmt.Errorf("%w: project result key: %v", ErrMalformed, err)
	}
	if s.aead, err = SessionAEAD(shared, s.eph[:], projectKey, s.client); err != nil {
		return nil, err
	}
	s.note = ed25519.Sign(clientKey, SessionNoteMessage(projectKey, s.eph[:]))
	return s, nil
}

// Seal seals in under the session: the envelope to sign (SignOuter or
// SignOuterBatch), its inner record unsigned, its nonce read from rnd.
func (s *Session) Seal(in Inner, rnd io.Reader) (*Envelope, error) {
	if len(in.Output) > MaxOutput {
		return nil, fmt.Errorf("%w: output of %d bytes (max %d)", ErrMalformed, len(in.Output), MaxOutput)
	}
	if len(in.Error) > MaxErrorLen {
		in.Error = in.Error[:MaxErrorLen]
	}
	in.Sig = nil
	plain, err := codec.Marshal(&in)
	if err != nil {
		return nil, err
	}
	sealed := make([]byte, sessionHeader, sessionHeader+len(plain)+chacha20poly1305.Overhead)
	copy(sealed, sessionMagic)
	copy(sealed[len(sessionMagic):], s.eph[:])
	copy(sealed[len(sessionMagic)+32:], s.note)
	nonce := sealed[sessionHeader-sessionNonceSize : sessionHeader]
	if _, err := io.ReadFull(rnd, nonce); err != nil {
		return nil, fmt.Errorf("seal result: %w", err)
	}
	sealed = s.aead.Seal(sealed, nonce, plain, SessionAD(in.Job, s.client))
	return &Envelope{Job: in.Job, Client: s.client, Sealed: sealed}, nil
}

// SessionSealed is a session's sealed bytes taken apart (SplitSession).
type SessionSealed struct {
	Eph        []byte // the client's ephemeral X25519 public key
	Note       []byte // the client's signature of SessionNoteMessage
	Nonce      []byte
	Ciphertext []byte
}

// SplitSession takes sealed bytes apart as a session's; false when they
// are not laid out as one (Seal's, then).
func SplitSession(sealed []byte) (SessionSealed, bool) {
	if len(sealed) < SessionOverhead || !bytes.HasPrefix(sealed, []byte(sessionMagic)) {
		return SessionSealed{}, false
	}
	b := sealed[len(sessionMagic):]
	return SessionSealed{Eph: b[:32], Note: b[32 : 32+ed25519.SignatureSize],
		Nonce:      b[32+ed25519.SignatureSize : 32+ed25519.SignatureSize+sessionNonceSize],
		Ciphertext: b[32+ed25519.SignatureSize+sessionNonceSize:]}, true
}

// SessionNoteMessage is what a client signs of its session with a
// project: the project's result key and the session's ephemeral key.
func SessionNoteMessage(projectKey, eph []byte) []byte {
	b := make([]byte, 0, len(sessionNoteDomain)+64)
	return append(append(append(b, sessionNoteDomain...), projectKey...), eph...)
}

// SessionAEAD is a session's cipher from the X25519 agreement shared of
// the ephemeral key eph with the project's result key, for client.
func SessionAEAD(shared, eph, projectKey []byte, client ed25519.PublicKey) (cipher.AEAD, error) {
	info := make([]byte, 0, len(sessionKeyDomain)+96)
	info = append(append(append(append(info, sessionKeyDomain...), eph...), projectKey...), client...)
	key, err := hkdf.Key(sha256.New, shared, nil, string(info), chacha20poly1305.KeySize)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return chacha20poly1305.NewX(key)
}

// SessionAD is the associated data a session's record of job by client
// is sealed with.
func SessionAD(job []byte, client ed25519.PublicKey) []byte {
	b := make([]byte, 0, len(sessionADDomain)+1+len(job)+len(client))
	b = append(append(b, sessionADDomain...), byte(len(job)))
	return append(append(b, job...), client...)
}

// openSession opens a session's sealed bytes of envelope e with the
// project's result key: false when the note does not verify under the
// envelope's client or the record does not open.
func openSession(e *Envelope, ss SessionSealed, projectPriv, projectPub *[32]byte) ([]byte, bool) {
	if len(e.Client) != ed25519.PublicKeySize || !ed25519.Verify(e.Client, SessionNoteMessage(projectPub[:], ss.Eph), ss.Note) {
		return nil, false
	}
	shared, err := curve25519.X25519(projectPriv[:], ss.Eph)
	if err != nil {
		return nil, false
	}
	aead, err := SessionAEAD(shared, ss.Eph, projectPub[:], e.Client)
	if err != nil {
		return nil, false
	}
	plain, err := aead.Open(nil, ss.Nonce, ss.Ciphertext, SessionAD(e.Job, e.Client))
	return plain, err == nil
}
