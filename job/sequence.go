package job

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/sigverify"
)

// Bounds of a sequence and its checkpoints.
const (
	MaxSteps = 10_000 // Spec.Steps
	// MaxCheckpointData bounds a checkpoint's state, in bytes (256 KiB).
	MaxCheckpointData = 256 << 10
	// MaxTrickleBytes bounds a checkpoint's sealed trickle, in bytes.
	MaxTrickleBytes = 16 << 10
	// MaxCheckpointCert bounds the client certificate (DER) a checkpoint
	// carries, in bytes.
	MaxCheckpointCert = 8 << 10
	// MaxCheckpointSize bounds an encoded checkpoint, in bytes.
	MaxCheckpointSize = MaxCheckpointData + MaxTrickleBytes + MaxCheckpointCert + 1024
	checkpointDomain  = "up/checkpoint/v1\x00"
)

// IsSequence reports whether the spec is a sequence of steps run in order
// by one client: version 6 on.
func (s *Spec) IsSequence() bool { return s.Steps != 0 }

// Checkpoint is the state a sequence's client reached after a step,
// signed by that client: the next step's input, whoever runs it. The
// job's replicas keep the newest (highest Step) and count one of the
// claim's own as its renewal; a client that resumes the sequence after
// the claim lapsed starts from it. Trickle, when set, is a progress
// message sealed to the project (a result envelope, package result) that
// the replicas hold until the project collects it.
type Checkpoint struct {
	_       struct{} `cbor:",toarray"`
	Job     []byte   // the job's key
	Client  []byte   // the signing client's Ed25519 public key
	Cert    []byte   // the client's certificate (DER), whose key is Client
	Start   int64    // the start of the claim the step ran under, Unix ms
	Step    uint16   // steps done, 1..Spec.Steps
	Data    []byte   // the state after Step, at most MaxCheckpointData bytes
	Trickle []byte   // sealed progress for the project; nil: none
	Sig     []byte
}

// Validate checks the checkpoint's bounds (not its signature: Verify).
func (c *Checkpoint) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: checkpoint: "+format, append([]any{ErrMalformed}, args...)...)
	}
	switch {
	case len(c.Job) == 0 || len(c.Job) > MaxResultRefLen:
		return bad("job key of %d bytes", len(c.Job))
	case len(c.Client) != ed25519.PublicKeySize:
		return bad("client key of %d bytes", len(c.Client))
	case len(c.Cert) == 0 || len(c.Cert) > MaxCheckpointCert:
		return bad("certificate of %d bytes (1..%d)", len(c.Cert), MaxCheckpointCert)
	case c.Start <= 0:
		return bad("claim start %d", c.Start)
	case c.Step == 0 || c.Step > MaxSteps:
		return bad("step %d (1..%d)", c.Step, MaxSteps)
	case len(c.Data) > MaxCheckpointData:
		return bad("state of %d bytes (max %d)", len(c.Data), MaxCheckpointData)
	case len(c.Trickle) > MaxTrickleBytes:
		return bad("trickle of %d bytes (max %d)", len(c.Trickle), MaxTrickleBytes)
	case len(c.Sig) != ed25519.SignatureSize && len(c.Sig) != 0:
		return bad("signature of %d bytes", len(c.Sig))
	}
	return nil
}

func (c *Checkpoint) payload() []byte {
	u := *c
	u.Sig = nil
	b, err := codec.Marshal(&u)
	if err != nil {
		panic(err) // byte strings and integers always encode
	}
	return append([]byte(checkpointDomain), b...)
}

// SignCheckpoint signs c with the client's key, setting Client and Sig.
func SignCheckpoint(c Checkpoint, key ed25519.PrivateKey) (*Checkpoint, error) {
	c.Client = append([]byte(nil), key.Public().(ed25519.PublicKey)...)
	c.Sig = nil
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Sig = ed25519.Sign(key, c.payload())
	return &c, nil
}

// Verify checks the checkpoint's signature by its Client key.
func (c *Checkpoint) Verify() error {
	if len(c.Sig) != ed25519.SignatureSize || !sigverify.Verify(ed25519.PublicKey(c.Client), c.payload(), c.Sig) {
		return fmt.Errorf("checkpoint of job %x step %d: %w", c.Job, c.Step, ErrBadSignature)
	}
	return nil
}

// Encode is the checkpoint's canonical encoding.
func (c *Checkpoint) Encode() []byte {
	b, err := codec.Marshal(c)
	if err != nil {
		panic(err)
	}
	return b
}

// DecodeCheckpoint parses an encoded checkpoint within its bounds,
// refusing a non-canonical encoding and an unsigned one.
func DecodeCheckpoint(b []byte) (*Checkpoint, error) {
	if len(b) > MaxCheckpointSize {
		return nil, fmt.Errorf("%w: checkpoint of %d bytes (max %d)", ErrMalformed, len(b), MaxCheckpointSize)
	}
	var c Checkpoint
	if err := codec.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %v", ErrMalformed, err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(c.Sig) == 0 {
		return nil, fmt.Errorf("%w: checkpoint unsigned", ErrMalformed)
	}
	if !bytes.Equal(c.Encode(), b) {
		return nil, fmt.Errorf("%w: checkpoint not canonically encoded", ErrMalformed)
	}
	return &c, nil
}

// NewerCheckpoint reports whether a should replace b as a job's newest
// checkpoint: more steps done, then the later claim, then the client key
// and the state bytewise (so every replica keeps the same one whatever
// order they arrive in: a join). b nil: a is newer.
func NewerCheckpoint(a, b *Checkpoint) bool {
	if b == nil {
		return true
	}
	if a.Step != b.Step {
		return a.Step > b.Step
	}
	if a.Start != b.Start {
		return a.Start > b.Start
	}
	if c := bytes.Compare(a.Client, b.Client); c != 0 {
		return c > 0
	}
	return bytes.Compare(a.Data, b.Data) > 0
}

// Renewal is a sequence claim's latest renewal as one node saw it: the
// claim (Client, Start) whose checkpoint it stored, and when, on the
// node's own clock (Unix ms). The zero Renewal renews nothing.
type Renewal struct {
	Client []byte
	Start  int64
	At     int64
}

// LapseRenewed is Lapse for a sequence: a claim the renewal names has its
// deadline moved to r.At + tFinish (T_finish is a sequence's deadline per
// step) when that is later than its own, so it lapses skew ms after
// that on the node's clock. A renewal of another claim, a released claim
// and other states are judged as Lapse judges them. Renewals are the
// node's own observation, never replicated: each replica measures a
// step's deadline on its own clock from when it stored the checkpoint.
func LapseRenewed(s State, now, tFinish, skew int64, r Renewal) State {
	if s.Phase == Claimed && r.At > 0 && r.Start == s.Start && bytes.Equal(r.Client, s.Client) &&
		s.Deadline >= s.Start+tFinish {
		if ext := r.At + tFinish - s.Deadline; ext > 0 {
			now -= ext
		}
	}
	return Lapse(s, now, tFinish, skew)
}

// ReceiveRenewed is Receive with the held claim judged by LapseRenewed:
// a tombstone of a claim its checkpoints keep live here stays out.
func ReceiveRenewed(held, in State, now, tFinish, skew int64, r Renewal) State {
	if in.IsTombstone() && held.Phase == Claimed && held.Start == in.Start && bytes.Equal(held.Client, in.Client) &&
		LapseRenewed(held, now, tFinish, skew, r).Phase == Claimed {
		return held
	}
	return Merge(held, in)
}

// orderDomain separates a sequence order's signature from others.
const orderDomain = "up/sequence-order/v1\x00"

// OrderStatement is what a project signs to end or extend its sequence
// key: the sequence has steps steps from now on (fewer than the spec's
// ends it after that step, at the earliest after the newest checkpoint;
// more extends it), in the project's order rev (its clock's Unix ms when
// it ordered: a later order has a higher rev and replaces an earlier).
func OrderStatement(key []byte, steps uint16, rev uint64) []byte {
	b := append([]byte(orderDomain), byte(len(key)))
	b = append(b, key...)
	b = append(b, byte(steps>>8), byte(steps))
	for i := 7; i >= 0; i-- {
		b = append(b, byte(rev>>(8*i)))
	}
	return b
}

// MajorityAtLeast is the largest step count a majority (⌊n/2⌋+1) of the
// n answers are at least: what a client takes for a sequence's length
// when its replicas answer different ones (an order that reached some of
// them). 0 without answers.
func MajorityAtLeast(answers []uint16) uint16 {
	if len(answers) == 0 {
		return 0
	}
	sorted := append([]uint16(nil), answers...)
	for i := 1; i < len(sorted); i++ { // insertion sort, descending: a handful of answers
		for j := i; j > 0 && sorted[j] > sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	return sorted[len(sorted)/2]
}
