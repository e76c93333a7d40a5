package wire

import (
	"fmt"

	"github.com/up-pool/up/job"
)

// Sequence protocols: a sequence's client sends each step's checkpoint to
// the job's replicas; a resuming client gets the newest; the project gets
// and collects the trickles the checkpoints carried.
const (
	// ProtoCheckpointPut stores a claim's checkpoint on a replica, which
	// counts it as the claim's renewal.
	ProtoCheckpointPut = "/up/job/checkpoint/1.0.0"
	// ProtoCheckpointGet returns the newest checkpoint a replica holds.
	ProtoCheckpointGet = "/up/job/checkpoint/get/1.0.0"
	// ProtoTrickleGet returns the trickles a replica holds for jobs of
	// the asking project.
	ProtoTrickleGet = "/up/job/trickle/get/1.0.0"
	// ProtoTrickleCollect tells a replica the project recorded a job's
	// trickles up to a step: it drops them.
	ProtoTrickleCollect = "/up/job/trickle/collect/1.0.0"
)

// Sequence protocol bounds.
const (
	// MaxCheckpointFrame bounds a frame carrying one checkpoint.
	MaxCheckpointFrame = job.MaxCheckpointSize + 1024
	// MaxTricklesHeld bounds the trickles a replica keeps per job, and so
	// what a TrickleGetResponse carries per job.
	MaxTricklesHeld = 32
	// MaxTrickleKeys bounds the jobs of one trickle request.
	MaxTrickleKeys = 16
	// MaxTrickleFrame bounds a trickle request's or response's frame.
	MaxTrickleFrame = MaxTrickleKeys*MaxTricklesHeld*(job.MaxTrickleBytes+256) + 4096
)

// CheckpointPut carries an encoded job.Checkpoint.
type CheckpointPut struct {
	_          struct{} `cbor:",toarray"`
	Checkpoint []byte
}

// Validate bounds a decoded CheckpointPut.
func (r *CheckpointPut) Validate() error {
	if len(r.Checkpoint) == 0 || len(r.Checkpoint) > job.MaxCheckpointSize {
		return fmt.Errorf("checkpoint of %d bytes (max %d): %w", len(r.Checkpoint), job.MaxCheckpointSize, ErrMalformed)
	}
	return nil
}

// CheckpointAck answers a CheckpointPut: the sequence's step count as the
// replica knows it (the spec's, or the project's newer order: a client
// stops once it has done Steps).
type CheckpointAck struct {
	_     struct{} `cbor:",toarray"`
	Steps uint16
}

// Validate bounds a decoded CheckpointAck.
func (r *CheckpointAck) Validate() error {
	if r.Steps > job.MaxSteps {
		return fmt.Errorf("checkpoint ack of %d steps (max %d): %w", r.Steps, job.MaxSteps, ErrMalformed)
	}
	return nil
}

// CheckpointGetRequest asks for a job's newest checkpoint.
type CheckpointGetRequest struct {
	_   struct{} `cbor:",toarray"`
	Key []byte
}

// Validate bounds a decoded CheckpointGetRequest.
func (r *CheckpointGetRequest) Validate() error {
	if len(r.Key) == 0 || len(r.Key) > MaxJobKeyLen {
		return fmt.Errorf("checkpoint get of a %d-byte key: %w", len(r.Key), ErrMalformed)
	}
	return nil
}

// CheckpointGetResponse carries the newest checkpoint held (nil: none)
// and the sequence's step count as the replica knows it.
type CheckpointGetResponse struct {
	_          struct{} `cbor:",toarray"`
	Checkpoint []byte
	Steps      uint16
}

// Validate bounds a decoded CheckpointGetResponse.
func (r *CheckpointGetResponse) Validate() error {
	if len(r.Checkpoint) > job.MaxCheckpointSize || r.Steps > job.MaxSteps {
		return fmt.Errorf("checkpoint of %d bytes, %d steps: %w", len(r.Checkpoint), r.Steps, ErrMalformed)
	}
	return nil
}

// TrickleGetRequest asks a replica for the trickles of jobs.
type TrickleGetRequest struct {
	_    struct{} `cbor:",toarray"`
	Keys [][]byte
}

// Validate bounds a decoded TrickleGetRequest.
func (r *TrickleGetRequest) Validate() error {
	if len(r.Keys) == 0 || len(r.Keys) > MaxTrickleKeys {
		return fmt.Errorf("trickle get of %d jobs (1..%d): %w", len(r.Keys), MaxTrickleKeys, ErrMalformed)
	}
	for _, k := range r.Keys {
		if len(k) == 0 || len(k) > MaxJobKeyLen {
			return fmt.Errorf("trickle get of a %d-byte key: %w", len(k), ErrMalformed)
		}
	}
	return nil
}

// TrickleGetResponse carries, per key asked, the checkpoints held whose
// trickles are not collected yet (encoded job.Checkpoint, without their
// state: the project needs the signed step and the sealed trickle only).
type TrickleGetResponse struct {
	_        struct{} `cbor:",toarray"`
	Trickles [][][]byte
}

// Validate bounds a decoded TrickleGetResponse.
func (r *TrickleGetResponse) Validate() error {
	if len(r.Trickles) > MaxTrickleKeys {
		return fmt.Errorf("trickles of %d jobs (max %d): %w", len(r.Trickles), MaxTrickleKeys, ErrMalformed)
	}
	for _, ts := range r.Trickles {
		if len(ts) > MaxTricklesHeld {
			return fmt.Errorf("%d trickles of a job (max %d): %w", len(ts), MaxTricklesHeld, ErrMalformed)
		}
		for _, t := range ts {
			if len(t) == 0 || len(t) > job.MaxTrickleBytes+job.MaxCheckpointCert+1024 {
				return fmt.Errorf("trickle of %d bytes: %w", len(t), ErrMalformed)
			}
		}
	}
	return nil
}

// TrickleCollect tells a replica the project recorded a job's trickles
// of steps up to UpTo.
type TrickleCollect struct {
	_    struct{} `cbor:",toarray"`
	Key  []byte
	UpTo uint16
}

// Validate bounds a decoded TrickleCollect.
func (r *TrickleCollect) Validate() error {
	if len(r.Key) == 0 || len(r.Key) > MaxJobKeyLen || r.UpTo == 0 || r.UpTo > job.MaxSteps {
		return fmt.Errorf("trickle collect of a %d-byte key up to step %d: %w", len(r.Key), r.UpTo, ErrMalformed)
	}
	return nil
}

// ProtoSequenceOrder carries a project's signed order to end or extend a
// sequence (job.OrderStatement) to the sequence's replicas.
const ProtoSequenceOrder = "/up/job/sequence/order/1.0.0"

// SequenceOrder is a project's order: job Key has Steps steps from now
// on, in the project's order Rev; Sig is the project's signature over
// job.OrderStatement(Key, Steps, Rev).
type SequenceOrder struct {
	_     struct{} `cbor:",toarray"`
	Key   []byte
	Steps uint16
	Rev   uint64
	Sig   []byte
}

// Validate bounds a decoded SequenceOrder.
func (o *SequenceOrder) Validate() error {
	if err := validKey(o.Key); err != nil {
		return err
	}
	switch {
	case o.Steps == 0 || o.Steps > job.MaxSteps:
		return fmt.Errorf("sequence order of %d steps (1..%d): %w", o.Steps, job.MaxSteps, ErrMalformed)
	case o.Rev == 0:
		return fmt.Errorf("sequence order of revision 0: %w", ErrMalformed)
	case len(o.Sig) != 64:
		return fmt.Errorf("sequence order signature of %d bytes: %w", len(o.Sig), ErrMalformed)
	}
	return nil
}
