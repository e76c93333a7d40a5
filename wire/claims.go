package wire

import (
	"crypto/ed25519"
	"fmt"
)

// Claim and result protocols.
const (
	// ProtoClaim asks a node to grant a job to the calling client.
	ProtoClaim = "/up/claim/1.0.0"
	// ProtoConfirm makes a granted claim permanent, with every reply.
	ProtoConfirm = "/up/claim/confirm/1.0.0"
	// ProtoRelease gives a claimed or granted job back.
	ProtoRelease = "/up/claim/release/1.0.0"
	// ProtoCertify hands a won claim's certificate (the quorum's signed
	// acceptances) to the job's nodes, which keep it as the claim's proof.
	ProtoCertify = "/up/claim/certify/1.0.0"
	// ProtoResult submits a client's sealed result.
	ProtoResult = "/up/job/result/1.0.0"
	// ProtoResultGet fetches results (projects; nodes repairing replicas).
	ProtoResultGet = "/up/job/result/get/1.0.0"
	// ProtoCollect tells a node the project has stored results durably.
	ProtoCollect = "/up/job/collect/1.0.0"
)

// Claim protocol bounds.
const (
	MaxReplies      = 32
	MaxReplyBytes   = 20 << 10
	MaxResultBytes  = 4<<20 + 64<<10
	MaxResultsFrame = 8 << 20
)

// ClaimRequest asks for a job. Ticket is a ticket of one of the
// client's record nodes for the job (claim.Signed of kind Ticket; see
// ProtoQuotaTicket), which nodes that enforce quotas require.
type ClaimRequest struct {
	_      struct{} `cbor:",toarray"`
	Job    []byte
	Ticket []byte
}

// Validate bounds a decoded ClaimRequest.
func (r *ClaimRequest) Validate() error {
	if len(r.Ticket) > MaxReplyBytes {
		return fmt.Errorf("claim ticket of %d bytes: %w", len(r.Ticket), ErrMalformed)
	}
	return validKey(r.Job)
}

func validKey(k []byte) error {
	if len(k) == 0 || len(k) > MaxJobKeyLen {
		return fmt.Errorf("job key of %d bytes: %w", len(k), ErrMalformed)
	}
	return nil
}

// ClaimResponse carries the node's signed reply (claim.Signed, encoded).
type ClaimResponse struct {
	_     struct{} `cbor:",toarray"`
	Reply []byte
}

// Validate bounds a decoded ClaimResponse.
func (r *ClaimResponse) Validate() error {
	if len(r.Reply) == 0 || len(r.Reply) > MaxReplyBytes {
		return fmt.Errorf("claim reply of %d bytes: %w", len(r.Reply), ErrMalformed)
	}
	return nil
}

// ConfirmRequest makes a claim permanent: the claim's start (Unix ms) and
// every signed reply the client gathered.
type ConfirmRequest struct {
	_       struct{} `cbor:",toarray"`
	Job     []byte
	Start   int64
	Replies [][]byte
}

// Validate bounds a decoded ConfirmRequest.
func (r *ConfirmRequest) Validate() error {
	if err := validKey(r.Job); err != nil {
		return err
	}
	if len(r.Replies) == 0 || len(r.Replies) > MaxReplies {
		return fmt.Errorf("confirm with %d replies: %w", len(r.Replies), ErrMalformed)
	}
	for _, b := range r.Replies {
		if len(b) == 0 || len(b) > MaxReplyBytes {
			return fmt.Errorf("claim reply of %d bytes: %w", len(b), ErrMalformed)
		}
	}
	return nil
}

// ConfirmResponse carries the node's signed acceptance of a confirm
// (claim.Signed of kind Accepted, encoded).
type ConfirmResponse struct {
	_      struct{} `cbor:",toarray"`
	Accept []byte
}

// Validate bounds a decoded ConfirmResponse.
func (r *ConfirmResponse) Validate() error {
	if len(r.Accept) == 0 || len(r.Accept) > MaxReplyBytes {
		return fmt.Errorf("acceptance of %d bytes: %w", len(r.Accept), ErrMalformed)
	}
	return nil
}

// CertifyRequest hands the nodes a won claim's certificate: the claim's
// start (Unix ms) and the signed acceptances of a quorum.
type CertifyRequest struct {
	_       struct{} `cbor:",toarray"`
	Job     []byte
	Start   int64
	Accepts [][]byte
}

// Validate bounds a decoded CertifyRequest.
func (r *CertifyRequest) Validate() error {
	if err := validKey(r.Job); err != nil {
		return err
	}
	return validCertificate(r.Start, r.Accepts)
}

// validCertificate bounds a claim's certificate as carried on the wire:
// its start and 1 to MaxReplies acceptances of at most MaxReplyBytes.
func validCertificate(start int64, accepts [][]byte) error {
	if start <= 0 || len(accepts) == 0 || len(accepts) > MaxReplies {
		return fmt.Errorf("certificate of start %d with %d acceptances: %w", start, len(accepts), ErrMalformed)
	}
	for _, b := range accepts {
		if len(b) == 0 || len(b) > MaxReplyBytes {
			return fmt.Errorf("acceptance of %d bytes: %w", len(b), ErrMalformed)
		}
	}
	return nil
}

// ReleaseRequest gives a job back. For a permanent claim, Start is the
// claim's start and Sig the client's signature over
// claim.ReleaseStatement(Job, client, Start), the proof the nodes keep
// with the release; a temporary claim is released with neither.
type ReleaseRequest struct {
	_     struct{} `cbor:",toarray"`
	Job   []byte
	Start int64
	Sig   []byte
	// Repair says the attempt this release ends found nodes among the
	// job's closest that do not hold it: the receiving replica resyncs
	// the job with its r closest now (at most once per ResyncInterval)
	// rather than at its next republish round.
	Repair bool
	// Reason is why the client gives the job back (its word, recorded
	// for `up project describe`, never acted on).
	Reason SkipReason
}

// Validate bounds a decoded ReleaseRequest.
func (r *ReleaseRequest) Validate() error {
	if err := validKey(r.Job); err != nil {
		return err
	}
	if r.Start < 0 || (len(r.Sig) != 0 && len(r.Sig) != ed25519.SignatureSize) || (len(r.Sig) != 0) != (r.Start > 0) {
		return fmt.Errorf("release of start %d with a signature of %d bytes: %w", r.Start, len(r.Sig), ErrMalformed)
	}
	if !r.Reason.Valid() {
		return fmt.Errorf("release for reason %d: %w", r.Reason, ErrMalformed)
	}
	return nil
}

// ResultSubmit delivers a sealed result (result.Envelope, encoded); At is
// when the client finished, Unix ms (every replica records the same).
type ResultSubmit struct {
	_        struct{} `cbor:",toarray"`
	Envelope []byte
	At       int64
	// Sent are the nodes (peer IDs) the client sends the result to in
	// this attempt, the receiver among them: the receiver hands the
	// result on only to the job's closest nodes not named here (its
	// word: a client that names a node it skipped delays only its own
	// result's spread, to the next republish round).
	Sent [][]byte
	// Start and Accepts are the claim's certificate (as CertifyRequest
	// carries it) when the client sends the result before the
	// certificate: a receiver that does not hold the claim learns it from
	// them, checked as a certify is, before it takes the result. Empty
	// when the certificate went out on its own, or the receiver accepted
	// the claim itself.
	Start   int64
	Accepts [][]byte
}

// MaxResultSent bounds ResultSubmit.Sent: a claim's nodes and the job's
// current closest.
const MaxResultSent = 32

// Validate bounds a decoded ResultSubmit.
func (r *ResultSubmit) Validate() error {
	if len(r.Envelope) == 0 || len(r.Envelope) > MaxResultBytes {
		return fmt.Errorf("result of %d bytes: %w", len(r.Envelope), ErrMalformed)
	}
	if r.At <= 0 {
		return fmt.Errorf("result time %d: %w", r.At, ErrMalformed)
	}
	if len(r.Sent) > MaxResultSent {
		return fmt.Errorf("result sent to %d nodes, at most %d: %w", len(r.Sent), MaxResultSent, ErrMalformed)
	}
	for _, id := range r.Sent {
		if len(id) == 0 || len(id) > MaxPeerIDBytes {
			return fmt.Errorf("result sent to a node ID of %d bytes: %w", len(id), ErrMalformed)
		}
	}
	if len(r.Accepts) == 0 && r.Start == 0 {
		return nil
	}
	return validCertificate(r.Start, r.Accepts)
}

// ResultGetRequest asks for the results of jobs.
type ResultGetRequest struct {
	_    struct{} `cbor:",toarray"`
	Keys [][]byte
}

// Validate bounds a decoded ResultGetRequest.
func (r *ResultGetRequest) Validate() error {
	if len(r.Keys) == 0 || len(r.Keys) > MaxJobsPerStore {
		return fmt.Errorf("result get of %d jobs: %w", len(r.Keys), ErrMalformed)
	}
	for _, k := range r.Keys {
		if err := validKey(k); err != nil {
			return err
		}
	}
	return nil
}

// ResultGetResponse has one entry per key, in order: the envelope, or
// empty when the node holds none.
type ResultGetResponse struct {
	_       struct{} `cbor:",toarray"`
	Results [][]byte
	States  []SyncItem // the replica states of the jobs found
}

// Validate bounds a decoded ResultGetResponse.
func (r *ResultGetResponse) Validate() error {
	if len(r.Results) > MaxJobsPerStore {
		return fmt.Errorf("result response of %d entries: %w", len(r.Results), ErrMalformed)
	}
	for _, b := range r.Results {
		if len(b) > MaxResultBytes {
			return fmt.Errorf("result of %d bytes: %w", len(b), ErrMalformed)
		}
	}
	return validateItems(r.States)
}

// CollectRequest tells a node that the project stored these jobs' results
// durably, at At (Unix ms). Proofs has, for each key, the proof nodes keep
// with the collected state and send in syncs (job.Proof, encoded): the
// project's signature over job.CollectStatement(key, At), or over the
// root of the harvest's collect batch with the job's inclusion path.
type CollectRequest struct {
	_      struct{} `cbor:",toarray"`
	Keys   [][]byte
	At     int64
	Proofs [][]byte
}

// MaxCollectProofBytes bounds one collect proof: a signature and an
// inclusion path (job.MaxPathBytes) with their encoding.
const MaxCollectProofBytes = 1 << 10

// Validate bounds a decoded CollectRequest.
func (r *CollectRequest) Validate() error {
	if len(r.Keys) == 0 || len(r.Keys) > MaxSyncItems || r.At <= 0 || len(r.Proofs) != len(r.Keys) {
		return fmt.Errorf("collect of %d jobs at %d with %d proofs: %w", len(r.Keys), r.At, len(r.Proofs), ErrMalformed)
	}
	for _, p := range r.Proofs {
		if len(p) == 0 || len(p) > MaxCollectProofBytes {
			return fmt.Errorf("collect proof of %d bytes: %w", len(p), ErrMalformed)
		}
	}
	for _, k := range r.Keys {
		if err := validKey(k); err != nil {
			return err
		}
	}
	return nil
}

// CollectResponse has one result per key.
type CollectResponse struct {
	_       struct{} `cbor:",toarray"`
	Results []StoreResult
}

// Validate bounds a decoded CollectResponse.
func (r *CollectResponse) Validate() error {
	if len(r.Results) > MaxSyncItems {
		return fmt.Errorf("collect response of %d results: %w", len(r.Results), ErrMalformed)
	}
	return nil
}
