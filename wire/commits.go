package wire

import (
	"fmt"

	"github.com/up-pool/up/job"
)

// Commit–reveal protocols: a unit's board, the r nodes closest to its
// board key (job.Spec.BoardKey), keeps the signed commitments of the
// unit's copies (result.Commit).
const (
	// ProtoCommitPost posts a client's commitment to a unit's board and
	// answers how many of the unit's jobs have one there.
	ProtoCommitPost = "/up/unit/commit/1.0.0"
	// ProtoCommitGet returns the commitments a board node keeps for a
	// unit (clients counting them, the project checking reveals).
	ProtoCommitGet = "/up/unit/commits/1.0.0"
)

// Commit protocol bounds.
const (
	// MaxCommitBytes bounds one encoded commitment (result.MaxCommitSize).
	MaxCommitBytes = 512
	// MaxBoardCommits bounds the commitments a board node keeps per unit,
	// and so a CommitGetResponse: two per copy of job.MaxCommit copies,
	// room for a client's second (equivocating) commitment as evidence.
	MaxBoardCommits = 4 * job.MaxCommit
	// MaxCommitFrame bounds a frame of either protocol, in bytes.
	MaxCommitFrame = job.MaxSignedSize + MaxCertBytes + MaxBoardCommits*MaxCommitBytes + 1024
)

// CommitPost carries a client's signed commitment (result.Commit,
// encoded) with the job's signed spec (job.Signed, encoded), so the board
// node checks the job is real and of the unit, and the project
// certificate (DER) the spec's CertRef names, nil when the node may hold
// it.
type CommitPost struct {
	_      struct{} `cbor:",toarray"`
	Signed []byte
	Cert   []byte
	Commit []byte
}

// Validate bounds a decoded CommitPost.
func (r *CommitPost) Validate() error {
	if len(r.Signed) == 0 || len(r.Signed) > job.MaxSignedSize {
		return fmt.Errorf("commit post with a job of %d bytes: %w", len(r.Signed), ErrMalformed)
	}
	if len(r.Cert) > MaxCertBytes {
		return fmt.Errorf("commit post with a certificate of %d bytes: %w", len(r.Cert), ErrMalformed)
	}
	if len(r.Commit) == 0 || len(r.Commit) > MaxCommitBytes {
		return fmt.Errorf("commitment of %d bytes: %w", len(r.Commit), ErrMalformed)
	}
	return nil
}

// CommitCount answers a CommitPost: how many distinct jobs of the unit
// have a commitment on this node now.
type CommitCount struct {
	_    struct{} `cbor:",toarray"`
	Jobs uint16
}

// Validate bounds a decoded CommitCount.
func (r *CommitCount) Validate() error {
	if r.Jobs > MaxBoardCommits {
		return fmt.Errorf("commit count %d (max %d): %w", r.Jobs, MaxBoardCommits, ErrMalformed)
	}
	return nil
}

// CommitGetRequest asks a board node for a unit's commitments by its
// board key.
type CommitGetRequest struct {
	_     struct{} `cbor:",toarray"`
	Board []byte
}

// Validate bounds a decoded CommitGetRequest.
func (r *CommitGetRequest) Validate() error {
	if len(r.Board) != 32 {
		return fmt.Errorf("board key of %d bytes, want 32: %w", len(r.Board), ErrMalformed)
	}
	return nil
}

// CommitGetResponse lists the commitments a board node keeps for a unit
// (encoded result.Commit, in the order it stored them) and how many
// distinct jobs they name.
type CommitGetResponse struct {
	_       struct{} `cbor:",toarray"`
	Commits [][]byte
	Jobs    uint16
}

// Validate bounds a decoded CommitGetResponse.
func (r *CommitGetResponse) Validate() error {
	if len(r.Commits) > MaxBoardCommits || int(r.Jobs) > len(r.Commits) {
		return fmt.Errorf("commit response of %d commitments naming %d jobs (max %d): %w", len(r.Commits), r.Jobs, MaxBoardCommits, ErrMalformed)
	}
	for _, c := range r.Commits {
		if len(c) == 0 || len(c) > MaxCommitBytes {
			return fmt.Errorf("commitment of %d bytes: %w", len(c), ErrMalformed)
		}
	}
	return nil
}
