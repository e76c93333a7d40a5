package result

import (
	"errors"
	"fmt"

	"github.com/up-pool/up/codec"
)

// Board is what a board node keeps for one unit: the commitments of its
// copies in the order they came, and when the unit's jobs expire (Unix
// ms on the project's clock, job.Spec.Expires), after which the node
// drops it. The rules of what it takes are pure (Add).
type Board struct {
	_       struct{} `cbor:",toarray"`
	Expires int64
	Commits []*Commit
}

// MaxBoardCommits bounds a board's commitments (wire.MaxBoardCommits).
const MaxBoardCommits = 64

// maxPerClientJob is how many distinct commitments a board keeps of one
// client for one job: the first, and a second as evidence of
// equivocation (the project refuses the result then: CheckReveal).
const maxPerClientJob = 2

// ErrBoardFull reports a commitment a board has no room for.
var ErrBoardFull = errors.New("unit board full")

// Add takes a verified commitment into the board: a copy of one it holds
// changes nothing (false); a client's third distinct commitment for a job,
// or one beyond MaxBoardCommits, is refused. The first commitment stands:
// none is ever replaced or removed before the board expires.
func (b *Board) Add(c *Commit) (bool, error) {
	same := 0
	for _, h := range b.Commits {
		if string(h.Job) != string(c.Job) || string(h.Client) != string(c.Client) {
			continue
		}
		if string(h.C) == string(c.C) {
			return false, nil
		}
		same++
	}
	if same >= maxPerClientJob {
		return false, fmt.Errorf("%w: client %x already committed %d times to job %x", ErrBoardFull, c.Client[:8], same, c.Job)
	}
	if len(b.Commits) >= MaxBoardCommits {
		return false, fmt.Errorf("%w: %d commitments", ErrBoardFull, len(b.Commits))
	}
	b.Commits = append(b.Commits, c)
	return true, nil
}

// Jobs is how many distinct jobs of the unit have a commitment here.
func (b *Board) Jobs() int {
	seen := make(map[string]bool, len(b.Commits))
	for _, c := range b.Commits {
		seen[string(c.Job)] = true
	}
	return len(seen)
}

// Encode is the board's canonical encoding (what a node stores).
func (b *Board) Encode() []byte {
	out, err := codec.Marshal(b)
	if err != nil {
		panic(err) // byte strings and integers always encode
	}
	return out
}

// DecodeBoard parses a stored board.
func DecodeBoard(raw []byte) (*Board, error) {
	var b Board
	if err := codec.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("%w: board: %v", ErrMalformed, err)
	}
	if len(b.Commits) > MaxBoardCommits {
		return nil, fmt.Errorf("%w: board of %d commitments", ErrMalformed, len(b.Commits))
	}
	return &b, nil
}
