package wire

import (
	"fmt"

	"github.com/up-pool/up/job"
)

// Job protocols.
const (
	// ProtoJobStore stores signed jobs (from a project, with replication
	// to the r closest; or from a node, one replica).
	ProtoJobStore = "/up/job/store/1.0.0"
	// ProtoJobGet returns signed jobs and their replica states.
	ProtoJobGet = "/up/job/get/1.0.0"
	// ProtoJobSync is the two-way republish: node to node, states by CID.
	ProtoJobSync = "/up/job/sync/1.0.0"
)

// Job protocol bounds.
const (
	MaxJobsPerStore = 256
	MaxCertsPerMsg  = 16
	MaxSyncItems    = 4096
	MaxJobKeyLen    = 64
	MaxJobFrame     = 8 << 20
)

// JobEnvelope carries one signed job and the sender's replica state with
// its proof.
type JobEnvelope struct {
	_       struct{} `cbor:",toarray"`
	Signed  []byte   // job.Signed, encoded
	State   job.State
	Listing []byte // job.SignedListing, encoded: what the index may say of it
	Proof   []byte // job.Proof, encoded: the evidence of State (at most job.MaxProofSize)
}

// StoreRequest stores jobs. Certs are the project certificates (DER) the
// jobs' CertRefs name, each once. Replicate asks the receiver to place
// the jobs on the r closest nodes and report how many acknowledged.
type StoreRequest struct {
	_         struct{} `cbor:",toarray"`
	Jobs      []JobEnvelope
	Certs     [][]byte
	Replicate bool
}

// Validate bounds a decoded StoreRequest.
func (r *StoreRequest) Validate() error {
	if len(r.Jobs) == 0 || len(r.Jobs) > MaxJobsPerStore {
		return fmt.Errorf("store of %d jobs (want 1..%d): %w", len(r.Jobs), MaxJobsPerStore, ErrMalformed)
	}
	if len(r.Certs) > MaxCertsPerMsg {
		return fmt.Errorf("store with %d certificates (max %d): %w", len(r.Certs), MaxCertsPerMsg, ErrMalformed)
	}
	for _, c := range r.Certs {
		if len(c) == 0 || len(c) > MaxCertBytes {
			return fmt.Errorf("certificate of %d bytes: %w", len(c), ErrMalformed)
		}
	}
	for i := range r.Jobs {
		if err := r.Jobs[i].validate(); err != nil {
			return err
		}
	}
	return nil
}

func (e *JobEnvelope) validate() error {
	if len(e.Signed) == 0 || len(e.Signed) > job.MaxSignedSize {
		return fmt.Errorf("job of %d bytes: %w", len(e.Signed), ErrMalformed)
	}
	if len(e.Listing) > job.MaxListingSize {
		return fmt.Errorf("listing of %d bytes: %w", len(e.Listing), ErrMalformed)
	}
	if len(e.Proof) > job.MaxProofSize {
		return fmt.Errorf("proof of %d bytes: %w", len(e.Proof), ErrMalformed)
	}
	return e.State.Validate()
}

// StoreResult is the outcome for one job of a StoreRequest, in order.
type StoreResult struct {
	_      struct{} `cbor:",toarray"`
	Status Status
	Msg    string // why, when not OK
	Acks   uint16 // replicas that hold the job (Replicate only)
}

// MaxReceiptsPerStore bounds the signed receipts in one StoreResponse.
const MaxReceiptsPerStore = 512

// StoreReceipt is a node's signed word that it stores some jobs of a
// StoreRequest: Sig is the account key's signature (job.SignReceipt) over
// the keys of the jobs Jobs (indexes into the request, in that order),
// under the node certificate Cert.
type StoreReceipt struct {
	_    struct{} `cbor:",toarray"`
	Cert []byte
	Jobs []uint16
	Sig  []byte
}

// StoreResponse answers a StoreRequest, one result per job, with the
// receipts of the nodes that store them: the receiver's own, and for a
// Replicate request those of the replicas it placed them on.
type StoreResponse struct {
	_        struct{} `cbor:",toarray"`
	Results  []StoreResult
	Receipts []StoreReceipt
}

// Validate bounds a decoded StoreResponse.
func (r *StoreResponse) Validate() error {
	if len(r.Results) > MaxJobsPerStore {
		return fmt.Errorf("store response with %d results: %w", len(r.Results), ErrMalformed)
	}
	for _, res := range r.Results {
		if len(res.Msg) > MaxReplyMsg {
			return fmt.Errorf("store result message of %d bytes: %w", len(res.Msg), ErrMalformed)
		}
	}
	if len(r.Receipts) > MaxReceiptsPerStore {
		return fmt.Errorf("store response with %d receipts (max %d): %w", len(r.Receipts), MaxReceiptsPerStore, ErrMalformed)
	}
	for _, rc := range r.Receipts {
		if len(rc.Cert) == 0 || len(rc.Cert) > MaxCertBytes || len(rc.Sig) != 64 || len(rc.Jobs) == 0 || len(rc.Jobs) > len(r.Results) {
			return fmt.Errorf("store receipt with a %d-byte certificate, %d-byte signature, %d jobs: %w", len(rc.Cert), len(rc.Sig), len(rc.Jobs), ErrMalformed)
		}
		for _, j := range rc.Jobs {
			if int(j) >= len(r.Results) {
				return fmt.Errorf("store receipt for job %d of %d: %w", j, len(r.Results), ErrMalformed)
			}
		}
	}
	return nil
}

// GetRequest asks for jobs by key (CID bytes).
type GetRequest struct {
	_    struct{} `cbor:",toarray"`
	Keys [][]byte
}

// Validate bounds a decoded GetRequest.
func (r *GetRequest) Validate() error {
	if len(r.Keys) == 0 || len(r.Keys) > MaxJobsPerStore {
		return fmt.Errorf("get of %d jobs (want 1..%d): %w", len(r.Keys), MaxJobsPerStore, ErrMalformed)
	}
	for _, k := range r.Keys {
		if len(k) == 0 || len(k) > MaxJobKeyLen {
			return fmt.Errorf("job key of %d bytes: %w", len(k), ErrMalformed)
		}
	}
	return nil
}

// GetResponse returns the jobs found (in request order) and the keys of
// those not held.
type GetResponse struct {
	_       struct{} `cbor:",toarray"`
	Jobs    []JobEnvelope
	Certs   [][]byte
	Missing [][]byte
}

// Validate bounds a decoded GetResponse.
func (r *GetResponse) Validate() error {
	if len(r.Jobs)+len(r.Missing) > MaxJobsPerStore || len(r.Certs) > MaxCertsPerMsg {
		return fmt.Errorf("get response of %d jobs, %d missing, %d certificates: %w",
			len(r.Jobs), len(r.Missing), len(r.Certs), ErrMalformed)
	}
	for i := range r.Jobs {
		if err := r.Jobs[i].validate(); err != nil {
			return err
		}
	}
	return nil
}

// SyncItem is a job key and the sender's replica state of it, with the
// state's proof.
type SyncItem struct {
	_     struct{} `cbor:",toarray"`
	Key   []byte
	State job.State
	Proof []byte // job.Proof, encoded: the evidence of State (at most job.MaxProofSize)
}

// SyncRequest is one republish batch from a job's closest node.
type SyncRequest struct {
	_     struct{} `cbor:",toarray"`
	Items []SyncItem
}

// Validate bounds a decoded SyncRequest.
func (r *SyncRequest) Validate() error { return validateItems(r.Items) }

func validateItems(items []SyncItem) error {
	if len(items) > MaxSyncItems {
		return fmt.Errorf("sync of %d items (max %d): %w", len(items), MaxSyncItems, ErrMalformed)
	}
	for _, it := range items {
		if len(it.Key) == 0 || len(it.Key) > MaxJobKeyLen {
			return fmt.Errorf("job key of %d bytes: %w", len(it.Key), ErrMalformed)
		}
		if len(it.Proof) > job.MaxProofSize {
			return fmt.Errorf("proof of %d bytes: %w", len(it.Proof), ErrMalformed)
		}
		if err := it.State.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// SyncResponse lists the keys the receiver lacks (send the jobs) and the
// states where the receiver's merged state differs from the sender's.
type SyncResponse struct {
	_     struct{} `cbor:",toarray"`
	Need  [][]byte
	Newer []SyncItem
}

// Validate bounds a decoded SyncResponse.
func (r *SyncResponse) Validate() error {
	if len(r.Need) > MaxSyncItems {
		return fmt.Errorf("sync response needs %d jobs: %w", len(r.Need), ErrMalformed)
	}
	for _, k := range r.Need {
		if len(k) == 0 || len(k) > MaxJobKeyLen {
			return fmt.Errorf("job key of %d bytes: %w", len(k), ErrMalformed)
		}
	}
	return validateItems(r.Newer)
}
