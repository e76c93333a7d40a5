package result

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/sigverify"
)

// Commit–reveal (Spec.Commit): before it submits a result, a client
// commits to it on the unit's board with
//
//	C = sha256(commitDomain || len(job) || job || client key || sha256(output) || salt)
//
// signed by its key, and the salt travels sealed in the result (Inner.Salt),
// so only the project can check the two against each other. C names the
// client's key, so no other client can reuse it; the salt, 32 bytes the
// client derives from its own key and the job (CommitSalt), keeps a
// commitment from telling the board which output it commits to.

const (
	commitDomain   = "up/commit/v1\x00"
	commitSigDom   = "up/commit-sig/v1\x00"
	saltDomain     = "up/commit-salt/v1\x00"
	commitHashSize = sha256.Size
)

// SaltSize is the length of a commitment's salt, in bytes.
const SaltSize = 32

// Errors of a commitment check.
var (
	ErrNoCommit       = errors.New("result without a commitment")
	ErrEquivocation   = errors.New("client signed two commitments for one job")
	ErrRevealMismatch = errors.New("revealed result does not match its commitment")
)

// CommitSalt is the salt a client uses for its commitment to the job of
// key: HMAC-SHA256 of the job key under the client's private key, so the
// client finds it again after a restart and nobody else can guess it.
func CommitSalt(clientKey ed25519.PrivateKey, job []byte) []byte {
	m := hmac.New(sha256.New, clientKey.Seed())
	m.Write([]byte(saltDomain))
	m.Write(job)
	return m.Sum(nil)
}

// Commitment computes C for a client's output of a job with a salt.
func Commitment(job, client, output, salt []byte) []byte {
	oh := sha256.Sum256(output)
	h := sha256.New()
	h.Write([]byte(commitDomain))
	h.Write([]byte{byte(len(job))})
	h.Write(job)
	h.Write(client)
	h.Write(oh[:])
	h.Write(salt)
	return h.Sum(nil)
}

// Commit is a client's signed commitment to its result of a job of a
// unit, as the unit's board keeps it and the project fetches it.
type Commit struct {
	_      struct{} `cbor:",toarray"`
	Job    []byte   // job key
	Board  []byte   // the unit's board key (job.Spec.BoardKey)
	Client []byte   // the client's account public key
	C      []byte   // the commitment (Commitment)
	Sig    []byte   // the client's signature over the fields above
}

// Commit bounds.
const (
	MaxCommitJob  = 128
	MaxCommitSize = 512 // encoded Commit, bytes
)

func (c *Commit) payload() []byte {
	b := append([]byte(commitSigDom), byte(len(c.Job)))
	b = append(b, c.Job...)
	b = append(b, c.Board...)
	b = append(b, c.Client...)
	return append(b, c.C...)
}

// SignCommit makes a client's signed commitment to output for the job of
// key on the board of its unit, with the client's salt (CommitSalt).
func SignCommit(clientKey ed25519.PrivateKey, job, board, output []byte) *Commit {
	pub := clientKey.Public().(ed25519.PublicKey)
	c := &Commit{Job: job, Board: board, Client: pub, C: Commitment(job, pub, output, CommitSalt(clientKey, job))}
	c.Sig = ed25519.Sign(clientKey, c.payload())
	return c
}

// Encode is the commitment's canonical encoding.
func (c *Commit) Encode() []byte {
	b, err := codec.Marshal(c)
	if err != nil {
		panic(err) // byte strings always encode
	}
	return b
}

// DecodeCommit parses a commitment within its bounds (it does not check
// the signature: Verify).
func DecodeCommit(b []byte) (*Commit, error) {
	if len(b) > MaxCommitSize {
		return nil, fmt.Errorf("%w: commitment of %d bytes (max %d)", ErrMalformed, len(b), MaxCommitSize)
	}
	var c Commit
	if err := codec.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: commitment: %v", ErrMalformed, err)
	}
	if len(c.Job) == 0 || len(c.Job) > MaxCommitJob || len(c.Board) != sha256.Size || len(c.Client) != ed25519.PublicKeySize ||
		len(c.C) != commitHashSize || len(c.Sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: commitment fields out of bounds", ErrMalformed)
	}
	return &c, nil
}

// Verify checks the client's signature over the commitment.
func (c *Commit) Verify() error {
	if len(c.Client) != ed25519.PublicKeySize || !sigverify.Verify(c.Client, c.payload(), c.Sig) {
		return fmt.Errorf("%w: commitment signature of job %x", ErrForged, c.Job)
	}
	return nil
}

// CheckReveal is the project's decision on a revealed result of job by
// client (its output and the salt sealed in it) against the signed
// commitments the unit's board served (any order; signatures already
// verified, others' commitments ignored): nil when exactly one commitment
// of that client for that job is there and the reveal matches it;
// ErrNoCommit when none is; ErrEquivocation when the client signed two
// different ones; ErrRevealMismatch when the reveal matches none. Pure.
func CheckReveal(commits []*Commit, job, client, output, salt []byte) error {
	var mine []string // the client's distinct commitments for the job
	for _, c := range commits {
		if string(c.Job) != string(job) || string(c.Client) != string(client) {
			continue
		}
		seen := false
		for _, m := range mine {
			seen = seen || m == string(c.C)
		}
		if !seen {
			mine = append(mine, string(c.C))
		}
	}
	switch {
	case len(mine) == 0:
		return fmt.Errorf("job %x, client %x: %w", job, client[:min(8, len(client))], ErrNoCommit)
	case len(mine) > 1:
		return fmt.Errorf("job %x, client %x: %d commitments: %w", job, client[:min(8, len(client))], len(mine), ErrEquivocation)
	case len(salt) != SaltSize || !hmac.Equal([]byte(mine[0]), Commitment(job, client, output, salt)):
		return fmt.Errorf("job %x, client %x: %w", job, client[:min(8, len(client))], ErrRevealMismatch)
	}
	return nil
}

// RevealNow is a client's decision to reveal its committed result: when
// at least f+1 of the board's nodes that answered count quorum or more of
// the unit's jobs committed (at most f of them lie, so one honest node
// vouches for the count), or when it has waited wait since its commitment
// (on its own clock: a missing copy cannot hold the result back longer).
// counts are the answering nodes' counts of committed jobs; f the faults
// tolerated among the board's r nodes; waitedMS and waitMS in ms. Pure.
func RevealNow(counts []int, quorum, f int, waitedMS, waitMS int64) bool {
	if waitedMS >= waitMS {
		return true
	}
	n := 0
	for _, c := range counts {
		if c >= quorum {
			n++
		}
	}
	return n >= f+1
}
