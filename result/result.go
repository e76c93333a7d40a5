// Package result owns a job result as it travels from a worker client to
// its project: the inner record (output, exit status, the client's
// certificate) sealed to the project's result key — under the client's
// session with the project (session.go), or alone with a NaCl anonymous
// box and the client's inner signature — so the nodes that carry it can neither read nor
// alter it undetected, and the outer envelope the client signs so nodes
// accept it only from the client that claimed the job (thesis 3.5.1,
// 3.6.1). Pure: no I/O.
package result

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/nacl/box"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/sigverify"
)

// Bounds.
const (
	MaxOutput   = 4 << 20 // bytes of output in one result
	MaxEnvelope = MaxOutput + 64<<10
	MaxErrorLen = 1024
)

const (
	innerDomain = "up/result-inner/v1\x00"
	outerDomain = "up/result/v1\x00"
)

// Errors.
var (
	ErrMalformed = errors.New("malformed result")
	ErrForged    = errors.New("result forged or altered")
)

// KilledPrefix begins Inner.Error when one of the volunteer's limits
// killed the job; the rest names the limit (the runner's reasons, such as
// "memory limit").
const KilledPrefix = "killed: "

// KilledBy returns the limit an Inner.Error says killed the job, "" when
// none did.
func KilledBy(errText string) string {
	if limit, ok := strings.CutPrefix(errText, KilledPrefix); ok {
		return limit
	}
	return ""
}

// Inner is what only the project can read.
type Inner struct {
	_          struct{} `cbor:",toarray"`
	Job        []byte   // job key
	ClientCert []byte   // the client's certificate, DER
	Output     []byte
	ExitCode   int32
	Error      string // why the job failed or was killed (KilledPrefix + the limit); empty on success
	CPU        int64  // ms of CPU the job used
	Wall       int64  // ms of wall-clock time
	At         int64  // when the result was made, Unix ms
	Sig        []byte // the client's signature over the fields above
	// Salt is the salt of the client's commitment to this result
	// (CommitSalt; commit–reveal jobs only, SaltSize bytes), nil
	// otherwise. Signed with the rest; a record without it keeps the
	// nine-field layout older projects read (inner.go).
	Salt []byte
}

func (in *Inner) payload() ([]byte, error) {
	c := *in
	c.Sig = nil
	b, err := codec.Marshal(&c)
	if err != nil {
		return nil, err
	}
	return append([]byte(innerDomain), b...), nil
}

// Envelope is what nodes carry: the sealed inner record, signed outside by
// the client.
//
// A client delivering several results of one place together signs them
// as a batch (SignOuterBatch): Sig then covers the batch's Merkle root and
// Path is the envelope's inclusion path (job.BatchPath) to it; a verifier
// folds the path with a few hashes and verifies each root's signature
// once (VerifyOuterWith and a cache).
type Envelope struct {
	_      struct{} `cbor:",toarray"`
	Job    []byte
	Client []byte // the client's account public key
	Sealed []byte
	Sig    []byte
	// Path is the envelope's encoded job.BatchPath when Sig signs a batch
	// of envelopes (nil: it signs this one). Encoded only when set: an
	// envelope signed alone keeps its four elements.
	Path []byte
}

// envelopeV1 is an envelope signed alone, encoded as every envelope was
// before batches: four elements.
type envelopeV1 struct {
	_      struct{} `cbor:",toarray"`
	Job    []byte
	Client []byte
	Sealed []byte
	Sig    []byte
}

// envelopeV1Fields is its element count (codec.ArrayLen): the layout is
// told by the count, without a failed decode of the other.
var envelopeV1Fields = codec.Fields(envelopeV1{})

func (e *Envelope) payload() []byte {
	h := sha256.Sum256(e.Sealed)
	b := append([]byte(outerDomain), byte(len(e.Job)))
	b = append(b, e.Job...)
	return append(b, h[:]...)
}

// Seal builds a result for jobKey signed by the client's key and sealed to
// the project's result public key. rand may be nil (crypto/rand).
func Seal(in Inner, clientKey ed25519.PrivateKey, projectKey []byte, rand io.Reader) (*Envelope, error) {
	e, err := SealInner(in, clientKey, projectKey, rand)
	if err != nil {
		return nil, err
	}
	SignOuter(e, clientKey)
	return e, nil
}

// SealInner is Seal without the outer signature: the envelope to sign
// alone (SignOuter) or with others of its delivery (SignOuterBatch).
func SealInner(in Inner, clientKey ed25519.PrivateKey, projectKey []byte, rand io.Reader) (*Envelope, error) {
	if len(projectKey) != 32 {
		return nil, fmt.Errorf("%w: project result key of %d bytes", ErrMalformed, len(projectKey))
	}
	if len(in.Output) > MaxOutput {
		return nil, fmt.Errorf("%w: output of %d bytes (max %d)", ErrMalformed, len(in.Output), MaxOutput)
	}
	if len(in.Error) > MaxErrorLen {
		in.Error = in.Error[:MaxErrorLen]
	}
	p, err := in.payload()
	if err != nil {
		return nil, err
	}
	in.Sig = ed25519.Sign(clientKey, p)
	b, err := codec.Marshal(&in)
	if err != nil {
		return nil, err
	}
	var pk [32]byte
	copy(pk[:], projectKey)
	sealed, err := box.SealAnonymous(nil, b, &pk, rand)
	if err != nil {
		return nil, fmt.Errorf("seal result: %w", err)
	}
	return &Envelope{Job: in.Job, Client: clientKey.Public().(ed25519.PublicKey), Sealed: sealed}, nil
}

// SignOuter signs e alone with the client's key.
func SignOuter(e *Envelope, clientKey ed25519.PrivateKey) {
	e.Path = nil
	e.Sig = ed25519.Sign(clientKey, e.payload())
}

// Encode is the envelope's canonical encoding: four elements when signed
// alone.
func (e *Envelope) Encode() []byte {
	var b []byte
	var err error
	if len(e.Path) == 0 {
		b, err = codec.Marshal(&envelopeV1{Job: e.Job, Client: e.Client, Sealed: e.Sealed, Sig: e.Sig})
	} else {
		b, err = codec.Marshal(e)
	}
	if err != nil {
		panic(err)
	}
	return b
}

// Digest identifies an envelope (the replica state's result reference).
func (e *Envelope) Digest() []byte {
	h := sha256.Sum256(e.Encode())
	return h[:]
}

// Decode parses an envelope and checks its bounds.
func Decode(b []byte) (*Envelope, error) {
	if len(b) > MaxEnvelope {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	var e Envelope
	var v1 envelopeV1
	if codec.ArrayLen(b) == envelopeV1Fields && codec.Unmarshal(b, &v1) == nil {
		e = Envelope{Job: v1.Job, Client: v1.Client, Sealed: v1.Sealed, Sig: v1.Sig}
	} else if err := codec.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	} else if len(e.Path) == 0 || len(e.Path) > job.MaxPathBytes {
		// Five elements only with a path: one encoding per envelope.
		return nil, fmt.Errorf("%w: batch path of %d bytes", ErrMalformed, len(e.Path))
	}
	if len(e.Job) == 0 || len(e.Job) > 128 || len(e.Client) != ed25519.PublicKeySize ||
		len(e.Sig) != ed25519.SignatureSize || len(e.Sealed) < box.AnonymousOverhead {
		return nil, fmt.Errorf("%w: fields out of bounds", ErrMalformed)
	}
	return &e, nil
}

// OuterMessage is what the outer signature Sig must sign: the envelope's
// payload when signed alone, its batch's root message — the path folded
// from the payload's leaf — when signed in a batch. An error (a path that
// does not decode or leads nowhere) wraps ErrForged.
func (e *Envelope) OuterMessage() ([]byte, error) {
	msg := e.payload()
	if len(e.Path) == 0 {
		return msg, nil
	}
	msg, err := job.BatchMessage(outerBatchDomain, msg, e.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: outer signature's batch path: %v", ErrForged, err)
	}
	return msg, nil
}

// VerifyOuter checks the client's outer signature: what nodes check.
func (e *Envelope) VerifyOuter() error {
	return e.VerifyOuterWith(sigverify.Verify)
}

// VerifyOuterWith is VerifyOuter with verify checking the signature: a
// verifier that caches what it verified (sigverify.Once) checks a batch's
// root once for all its envelopes.
func (e *Envelope) VerifyOuterWith(verify func(pub ed25519.PublicKey, msg, sig []byte) bool) error {
	msg, err := e.OuterMessage()
	if err != nil {
		return err
	}
	if !verify(e.Client, msg, e.Sig) {
		return fmt.Errorf("%w: outer signature", ErrForged)
	}
	return nil
}

// Open unseals an envelope with the project's result key and checks it
// end to end: the outer signature, that the box opens (any alteration of
// the sealed bytes fails here), the inner signature by the certificate's
// key, and that inner and outer agree on job and client. certKey returns
// the public key of a verified client certificate (the project checks it
// against the CA); the certificate is returned in Inner.ClientCert.
func Open(e *Envelope, projectPriv *[32]byte, certKey func(der []byte) (ed25519.PublicKey, error)) (*Inner, error) {
	if err := e.VerifyOuter(); err != nil {
		return nil, err
	}
	var pub [32]byte
	curve25519ScalarBase(&pub, projectPriv)
	b, session, ok := OpenSealed(e, projectPriv, &pub)
	if !ok {
		return nil, fmt.Errorf("%w: sealed box does not open", ErrForged)
	}
	var in Inner
	if err := codec.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("%w: inner: %v", ErrMalformed, err)
	}
	key, err := certKey(in.ClientCert)
	if err != nil {
		return nil, fmt.Errorf("client certificate in result: %w", err)
	}
	if !session {
		// A session's record is the client's by its note and key: no
		// signature of its own.
		p, err := in.payload()
		if err != nil {
			return nil, err
		}
		if !sigverify.Verify(key, p, in.Sig) {
			return nil, fmt.Errorf("%w: inner signature", ErrForged)
		}
	}
	if string(in.Job) != string(e.Job) || !key.Equal(ed25519.PublicKey(e.Client)) {
		return nil, fmt.Errorf("%w: inner and outer disagree on job or client", ErrForged)
	}
	return &in, nil
}

// OpenSealed opens an envelope's sealed bytes with the project's result
// key pair: as a session's (Session) when laid out as one and its note
// verifies, else as Seal's anonymous box. session says which opened.
func OpenSealed(e *Envelope, projectPriv, projectPub *[32]byte) (plain []byte, session, ok bool) {
	if ss, is := SplitSession(e.Sealed); is {
		if plain, ok := openSession(e, ss, projectPriv, projectPub); ok {
			return plain, true, true
		}
	}
	plain, ok = box.OpenAnonymous(nil, e.Sealed, projectPub, projectPriv)
	return plain, false, ok
}
