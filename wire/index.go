package wire

import (
	"fmt"
	"slices"

	"github.com/up-pool/up/job"
)

// Index protocols.
const (
	// ProtoIndexWrite writes (or rewrites) index entries; nodes only.
	ProtoIndexWrite = "/up/idx/write/1.0.0"
	// ProtoIndexWithdraw removes index entries; nodes only.
	ProtoIndexWithdraw = "/up/idx/withdraw/1.0.0"
	// ProtoIndexQuery answers a keyword query from one node's entries.
	ProtoIndexQuery = "/up/idx/query/1.0.0"
	// ProtoIndexQuerySkip is ProtoIndexQuery for a worker that names the
	// jobs it will not take (IndexQuerySkipRequest). Nodes without it
	// answer StatusNotFound: ask ProtoIndexQuery instead.
	ProtoIndexQuerySkip = "/up/idx/query/1.1.0"
)

// Index protocol bounds.
const (
	MaxIndexWrites = 1024
	MaxIndexHits   = 256
	MaxQueryBytes  = 1024
	MaxIndexFrame  = 4 << 20

	// MaxQuerySkips bounds the jobs an IndexQuerySkipRequest names,
	// MaxQuerySkipFrame its size in bytes.
	MaxQuerySkips     = 256
	MaxQuerySkipFrame = 24 << 10
)

// IndexWrite asks to hold one entry: the job's signed listing under one
// of the keywords it allows.
type IndexWrite struct {
	_        struct{} `cbor:",toarray"`
	Keyword  string
	Listing  []byte   // job.SignedListing, encoded
	Replicas [][]byte // the job's r closest nodes as the writer sees them (peer IDs)
	Reset    bool     // the job was claimed and given back: end the entry's quarantine
	Point    []byte   // the random point of the keyword's region the entry was placed at (32 bytes)
	Writer   []byte   // hand-overs only: the node that last wrote the entry (peer ID); ignored otherwise
}

// MaxReplicas bounds the replica set an entry carries.
const MaxReplicas = 16

// IndexWriteRequest writes entries; Certs are the project certificates
// their listings need, each once.
type IndexWriteRequest struct {
	_       struct{} `cbor:",toarray"`
	Entries []IndexWrite
	Certs   [][]byte
	Handoff bool // a node handing its entries over (moving, or splitting its load): no redirect
}

// Validate bounds a decoded IndexWriteRequest.
func (r *IndexWriteRequest) Validate() error {
	if len(r.Entries) == 0 || len(r.Entries) > MaxIndexWrites {
		return fmt.Errorf("index write of %d entries (want 1..%d): %w", len(r.Entries), MaxIndexWrites, ErrMalformed)
	}
	if len(r.Certs) > MaxCertsPerMsg {
		return fmt.Errorf("index write with %d certificates: %w", len(r.Certs), ErrMalformed)
	}
	for _, c := range r.Certs {
		if len(c) == 0 || len(c) > MaxCertBytes {
			return fmt.Errorf("certificate of %d bytes: %w", len(c), ErrMalformed)
		}
	}
	for _, e := range r.Entries {
		if err := job.ValidateKeyword(e.Keyword); err != nil {
			return err
		}
		if len(e.Listing) == 0 || len(e.Listing) > job.MaxListingSize {
			return fmt.Errorf("listing of %d bytes: %w", len(e.Listing), ErrMalformed)
		}
		if err := validReplicas(e.Replicas); err != nil {
			return err
		}
		if len(e.Point) != 0 && len(e.Point) != 32 {
			return fmt.Errorf("entry point of %d bytes: %w", len(e.Point), ErrMalformed)
		}
		if len(e.Writer) > MaxPeerIDBytes {
			return fmt.Errorf("entry writer id of %d bytes: %w", len(e.Writer), ErrMalformed)
		}
	}
	return nil
}

// IndexWriteResponse has one result per entry, in order.
type IndexWriteResponse struct {
	_       struct{} `cbor:",toarray"`
	Results []StoreResult
}

// Validate bounds a decoded IndexWriteResponse.
func (r *IndexWriteResponse) Validate() error {
	if len(r.Results) > MaxIndexWrites {
		return fmt.Errorf("index write response of %d results: %w", len(r.Results), ErrMalformed)
	}
	return nil
}

// IndexRef names one entry: a job under a keyword.
type IndexRef struct {
	_       struct{} `cbor:",toarray"`
	Keyword string
	Job     []byte
	// Final withdraws the entry because the job's state rules it out (it
	// was claimed, or finished, or collected): removed whichever node
	// wrote it. Otherwise (the sender is no longer the job's closest) only
	// the entry's author removes it.
	Final bool
}

// IndexWithdrawRequest removes entries.
type IndexWithdrawRequest struct {
	_     struct{} `cbor:",toarray"`
	Items []IndexRef
}

// Validate bounds a decoded IndexWithdrawRequest.
func (r *IndexWithdrawRequest) Validate() error {
	if len(r.Items) == 0 || len(r.Items) > MaxIndexWrites {
		return fmt.Errorf("withdraw of %d entries (want 1..%d): %w", len(r.Items), MaxIndexWrites, ErrMalformed)
	}
	for _, it := range r.Items {
		if err := job.ValidateKeyword(it.Keyword); err != nil {
			return err
		}
		if len(it.Job) == 0 || len(it.Job) > MaxJobKeyLen {
			return fmt.Errorf("job key of %d bytes: %w", len(it.Job), ErrMalformed)
		}
	}
	return nil
}

// IndexWithdrawResponse reports how many entries were removed.
type IndexWithdrawResponse struct {
	_       struct{} `cbor:",toarray"`
	Removed uint32
}

// Validate accepts every IndexWithdrawResponse.
func (r *IndexWithdrawResponse) Validate() error { return nil }

// IndexQueryRequest asks one node for entries under Keyword (the query's
// primary keyword) that match Query. A client's query (Page false) gets
// up to N entries chosen among the oldest and quarantines them; a harvest
// (Page true) pages through all matches in age order after the cursor.
type IndexQueryRequest struct {
	_            struct{} `cbor:",toarray"`
	Query        string
	Keyword      string
	N            uint16
	Page         bool
	AfterCreated int64
	AfterJob     []byte
}

// Validate bounds a decoded IndexQueryRequest.
func (r *IndexQueryRequest) Validate() error {
	if len(r.Query) == 0 || len(r.Query) > MaxQueryBytes {
		return fmt.Errorf("query of %d bytes (want 1..%d): %w", len(r.Query), MaxQueryBytes, ErrMalformed)
	}
	if err := job.ValidateKeyword(r.Keyword); err != nil {
		return err
	}
	if r.N == 0 || r.N > MaxIndexHits {
		return fmt.Errorf("query for %d entries (want 1..%d): %w", r.N, MaxIndexHits, ErrMalformed)
	}
	if len(r.AfterJob) > MaxJobKeyLen {
		return fmt.Errorf("cursor of %d bytes: %w", len(r.AfterJob), ErrMalformed)
	}
	return nil
}

// IndexQuerySkipRequest is a worker's query (Query.Page false) that names
// jobs it will not take: Skip are not served to it (they do not count
// among the oldest l it draws from), and Decline, entries served to it a
// moment ago that it will not take (a copy of a unit it ran, an
// application it does not allow), end their quarantine at once, so other
// clients see them without waiting T_quarantine.
type IndexQuerySkipRequest struct {
	_       struct{} `cbor:",toarray"`
	Query   IndexQueryRequest
	Skip    [][]byte
	Decline [][]byte
	// Reasons are why each job of Decline is declined, in order (empty:
	// none given); the client's word, recorded for `up project describe`.
	Reasons []SkipReason
}

// Validate bounds a decoded IndexQuerySkipRequest.
func (r *IndexQuerySkipRequest) Validate() error {
	if err := r.Query.Validate(); err != nil {
		return err
	}
	if r.Query.Page {
		return fmt.Errorf("skipping query that pages: %w", ErrMalformed)
	}
	if len(r.Skip)+len(r.Decline) > MaxQuerySkips {
		return fmt.Errorf("query skipping %d and declining %d jobs (max %d together): %w", len(r.Skip), len(r.Decline), MaxQuerySkips, ErrMalformed)
	}
	if len(r.Reasons) != 0 && len(r.Reasons) != len(r.Decline) {
		return fmt.Errorf("query declining %d jobs with %d reasons: %w", len(r.Decline), len(r.Reasons), ErrMalformed)
	}
	for _, why := range r.Reasons {
		if !why.Valid() {
			return fmt.Errorf("decline for reason %d: %w", why, ErrMalformed)
		}
	}
	for _, k := range append(slices.Clip(r.Skip), r.Decline...) {
		if len(k) == 0 || len(k) > MaxJobKeyLen {
			return fmt.Errorf("skipped job key of %d bytes: %w", len(k), ErrMalformed)
		}
	}
	return nil
}

// IndexHit is one entry answered: the job and what the index knows of it.
type IndexHit struct {
	_        struct{} `cbor:",toarray"`
	Job      []byte
	Project  string
	Created  int64
	Keywords []string
	Replicas [][]byte // the job's nodes when the entry was written: claim there, no lookup
	// Place is the root of the job's batch, from its listing
	// (job.Listing.Place): the job's replicas are the nodes closest to
	// job.PlaceKey(Job, Place). Empty: the job is placed by its key.
	Place []byte
}

func validReplicas(rs [][]byte) error {
	if len(rs) > MaxReplicas {
		return fmt.Errorf("%d replicas (max %d): %w", len(rs), MaxReplicas, ErrMalformed)
	}
	for _, r := range rs {
		if len(r) == 0 || len(r) > MaxPeerIDBytes {
			return fmt.Errorf("replica id of %d bytes: %w", len(r), ErrMalformed)
		}
	}
	return nil
}

// IndexQueryResponse lists the entries answered; More says a harvest has
// further pages on this node.
type IndexQueryResponse struct {
	_    struct{} `cbor:",toarray"`
	Hits []IndexHit
	More bool
}

// Validate bounds a decoded IndexQueryResponse.
func (r *IndexQueryResponse) Validate() error {
	if len(r.Hits) > MaxIndexHits {
		return fmt.Errorf("query answer of %d entries: %w", len(r.Hits), ErrMalformed)
	}
	for _, h := range r.Hits {
		if len(h.Job) == 0 || len(h.Job) > MaxJobKeyLen || len(h.Keywords) > job.MaxKeywords+job.MaxResources {
			return fmt.Errorf("malformed index hit: %w", ErrMalformed)
		}
		if err := validReplicas(h.Replicas); err != nil {
			return err
		}
		if len(h.Place) != 0 && len(h.Place) != job.PlaceRootLen {
			return fmt.Errorf("index hit's place of %d bytes: %w", len(h.Place), ErrMalformed)
		}
	}
	return nil
}
