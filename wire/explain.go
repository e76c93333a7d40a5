package wire

import "fmt"

// Explain protocols: what a node knows of why a job does not run. They
// change nothing; a project asks them for `up project describe`.
const (
	// ProtoJobExplain asks a job's replica what it holds of the job:
	// its state, claim, results and recent releases with reasons.
	ProtoJobExplain = "/up/job/explain/1.0.0"
	// ProtoIndexExplain asks an index node about one keyword and one
	// job: whether it lists the job, how often clients query the
	// keyword, and the recent declines of the job with reasons.
	ProtoIndexExplain = "/up/idx/explain/1.0.0"
)

// Explain bounds.
const (
	// MaxExplainNotes bounds the releases or declines one answer lists
	// (and a node keeps per job).
	MaxExplainNotes = 16
	// MaxExplainFrame bounds an explain answer's size in bytes.
	MaxExplainFrame = 16 << 10
)

// SkipReason says why a client gave a job back or passed it over. It is
// the client's word: a node records it attributed to the client's peer ID
// and never acts on it.
type SkipReason uint8

// Skip reasons.
const (
	SkipUnknown    SkipReason = iota // not said (an older client, or no reason fits)
	SkipNotAllowed                   // the job's application (or project's modules) is not allowed by the client
	SkipSameUnit                     // the client already ran a copy of the job's unit
	SkipNoBlobs                      // the job names blobs and the client cannot fetch blobs
	SkipMemory                       // the job needs more memory than the client offers
	SkipDeadline                     // the client cannot finish the job before its deadline
	SkipFailed                       // the job's application failed on the client
	SkipStopping                     // the client was stopping, paused or detached from the project
	SkipFetch                        // the client could not fetch the job's spec or inputs
	maxSkipReason
)

var skipNames = [...]string{"no reason given", "application not allowed", "copy of a unit the client already ran",
	"needs blobs the client cannot fetch", "needs more memory than the client offers",
	"cannot finish before the deadline", "application failed", "client stopping, paused or detached",
	"spec or inputs could not be fetched"}

func (r SkipReason) String() string {
	if r < maxSkipReason {
		return skipNames[r]
	}
	return fmt.Sprintf("reason %d", uint8(r))
}

// Valid reports whether r is a known reason.
func (r SkipReason) Valid() bool { return r < maxSkipReason }

// ExplainNote is one release or decline a node recorded: by whom, why,
// and how long before the answer (milliseconds on the answering node's
// clock: a duration, never a time).
type ExplainNote struct {
	_      struct{} `cbor:",toarray"`
	Client []byte   // the client that released or declined: its certificate's public key, as job states name clients
	Reason SkipReason
	AgeMS  int64
}

func validNotes(ns []ExplainNote) error {
	if len(ns) > MaxExplainNotes {
		return fmt.Errorf("%d notes (max %d): %w", len(ns), MaxExplainNotes, ErrMalformed)
	}
	for _, n := range ns {
		if len(n.Client) == 0 || len(n.Client) > MaxPeerIDBytes || n.AgeMS < 0 || !n.Reason.Valid() {
			return fmt.Errorf("note of a %d-byte client, age %d ms, reason %d: %w", len(n.Client), n.AgeMS, n.Reason, ErrMalformed)
		}
	}
	return nil
}

// JobExplainRequest asks a replica about one job.
type JobExplainRequest struct {
	_   struct{} `cbor:",toarray"`
	Job []byte
}

// Validate bounds a decoded JobExplainRequest.
func (r *JobExplainRequest) Validate() error { return validKey(r.Job) }

// JobExplainResponse is what a replica holds of a job. Held false: the
// node does not hold it (every other field zero).
type JobExplainResponse struct {
	_    struct{} `cbor:",toarray"`
	Held bool
	// State is the replica's state of the job: "open", "granted",
	// "claimed", "done" (a result held), "collected".
	State string
	// Claimant is the client holding the claim (its public key, as in
	// job.State.Client; empty if none),
	// ClaimAgeMS how long ago its claim started on this node's clock.
	Claimant   []byte
	ClaimAgeMS int64
	// Results is how many results the node holds for the job.
	Results int
	// Releases counts every release the node took for the job since it
	// has held it; Notes are the latest ones (at most MaxExplainNotes).
	Releases int
	Notes    []ExplainNote
}

// Validate bounds a decoded JobExplainResponse.
func (r *JobExplainResponse) Validate() error {
	if len(r.State) > 16 || len(r.Claimant) > MaxPeerIDBytes || r.ClaimAgeMS < 0 || r.Results < 0 || r.Releases < 0 {
		return fmt.Errorf("job explanation of state %q, %d-byte claimant, claim age %d ms, %d results, %d releases: %w",
			r.State, len(r.Claimant), r.ClaimAgeMS, r.Results, r.Releases, ErrMalformed)
	}
	return validNotes(r.Notes)
}

// IndexExplainRequest asks an index node about a keyword and a job.
type IndexExplainRequest struct {
	_       struct{} `cbor:",toarray"`
	Keyword string
	Job     []byte
}

// Validate bounds a decoded IndexExplainRequest.
func (r *IndexExplainRequest) Validate() error {
	if len(r.Keyword) == 0 || len(r.Keyword) > MaxQueryBytes {
		return fmt.Errorf("explained keyword of %d bytes: %w", len(r.Keyword), ErrMalformed)
	}
	return validKey(r.Job)
}

// IndexExplainResponse is what an index node knows of a keyword and a job.
type IndexExplainResponse struct {
	_ struct{} `cbor:",toarray"`
	// Listed: the node holds an entry of the job under the keyword;
	// Quarantined: it was served a moment ago and is not served again yet.
	Listed      bool
	Quarantined bool
	// Served is how many times the node served the entry.
	Served int
	// Queries is how many queries for the keyword the node answered since
	// it started; LastQueryMS how long ago the latest was (-1: none).
	Queries     int
	LastQueryMS int64
	// Declines counts the clients' declines of the job the node took;
	// Notes are the latest (at most MaxExplainNotes).
	Declines int
	Notes    []ExplainNote
}

// Validate bounds a decoded IndexExplainResponse.
func (r *IndexExplainResponse) Validate() error {
	if r.Served < 0 || r.Queries < 0 || r.LastQueryMS < -1 || r.Declines < 0 {
		return fmt.Errorf("index explanation of %d served, %d queries, last %d ms ago, %d declines: %w",
			r.Served, r.Queries, r.LastQueryMS, r.Declines, ErrMalformed)
	}
	return validNotes(r.Notes)
}
