package wire

import "fmt"

// Claim protocols for several jobs of one place at once: one request per
// node names them all, and the node answers each under one signature
// (claim.SignBatch). Each job's claim is decided as if asked alone.
const (
	// ProtoClaimMany asks a node to grant several jobs to the calling
	// client.
	ProtoClaimMany = "/up/claim/many/1.0.0"
	// ProtoConfirmMany confirms several granted claims, each with every
	// reply gathered for it.
	ProtoConfirmMany = "/up/claim/confirm/many/1.0.0"
)

// Bounds of the many-job claim messages.
const (
	// MaxClaimMany is the most jobs one request names: below a client's
	// claim burst at a node (claimnet.Config.Burst, default 40), which
	// a request is charged one token per job of.
	MaxClaimMany = 32
	// MaxClaimManyBytes bounds a many-job request or response on the
	// wire (a confirm of MaxClaimMany jobs with r = 5 replies of ~1.5 kB
	// each is ~250 kB).
	MaxClaimManyBytes = 4 << 20
	// MaxRefusalLen bounds the reason given for one job's refusal.
	MaxRefusalLen = 256
)

// ClaimManyRequest asks for several jobs: 1 to MaxClaimMany distinct job
// keys, and either no tickets or one per job, in the same order (see
// ClaimRequest).
type ClaimManyRequest struct {
	_       struct{} `cbor:",toarray"`
	Jobs    [][]byte
	Tickets [][]byte
}

// Validate bounds a decoded ClaimManyRequest.
func (r *ClaimManyRequest) Validate() error {
	if len(r.Jobs) == 0 || len(r.Jobs) > MaxClaimMany {
		return fmt.Errorf("claim of %d jobs: %w", len(r.Jobs), ErrMalformed)
	}
	if len(r.Tickets) != 0 && len(r.Tickets) != len(r.Jobs) {
		return fmt.Errorf("claim of %d jobs with %d tickets: %w", len(r.Jobs), len(r.Tickets), ErrMalformed)
	}
	seen := make(map[string]bool, len(r.Jobs))
	for _, k := range r.Jobs {
		if err := validKey(k); err != nil {
			return err
		}
		if seen[string(k)] {
			return fmt.Errorf("claim names job %x twice: %w", k, ErrMalformed)
		}
		seen[string(k)] = true
	}
	for _, t := range r.Tickets {
		if len(t) > MaxReplyBytes {
			return fmt.Errorf("claim ticket of %d bytes: %w", len(t), ErrMalformed)
		}
	}
	return nil
}

// ClaimManyResponse carries the node's signed reply for each job of the
// request, in its order (claim.Signed, encoded; the replies share one
// signature over their batch's root).
type ClaimManyResponse struct {
	_       struct{} `cbor:",toarray"`
	Replies [][]byte
}

// Validate bounds a decoded ClaimManyResponse.
func (r *ClaimManyResponse) Validate() error {
	if len(r.Replies) == 0 || len(r.Replies) > MaxClaimMany {
		return fmt.Errorf("claim response with %d replies: %w", len(r.Replies), ErrMalformed)
	}
	for _, b := range r.Replies {
		if len(b) == 0 || len(b) > MaxReplyBytes {
			return fmt.Errorf("claim reply of %d bytes: %w", len(b), ErrMalformed)
		}
	}
	return nil
}

// ConfirmManyRequest confirms several claims of the calling client: 1 to
// MaxClaimMany confirms of distinct jobs.
type ConfirmManyRequest struct {
	_     struct{} `cbor:",toarray"`
	Items []ConfirmRequest
}

// Validate bounds a decoded ConfirmManyRequest.
func (r *ConfirmManyRequest) Validate() error {
	if len(r.Items) == 0 || len(r.Items) > MaxClaimMany {
		return fmt.Errorf("confirm of %d jobs: %w", len(r.Items), ErrMalformed)
	}
	seen := make(map[string]bool, len(r.Items))
	for i := range r.Items {
		if err := r.Items[i].Validate(); err != nil {
			return err
		}
		if seen[string(r.Items[i].Job)] {
			return fmt.Errorf("confirm names job %x twice: %w", r.Items[i].Job, ErrMalformed)
		}
		seen[string(r.Items[i].Job)] = true
	}
	return nil
}

// ConfirmManyResponse answers each confirm of the request, in its order:
// the node's signed acceptance (claim.Signed of kind Accepted; the
// acceptances share one signature over their batch's root), or, where it
// refused, an empty acceptance and the reason.
type ConfirmManyResponse struct {
	_       struct{} `cbor:",toarray"`
	Accepts [][]byte
	Refused []string
}

// Validate bounds a decoded ConfirmManyResponse.
func (r *ConfirmManyResponse) Validate() error {
	if len(r.Accepts) == 0 || len(r.Accepts) > MaxClaimMany || len(r.Refused) != len(r.Accepts) {
		return fmt.Errorf("confirm response with %d acceptances and %d refusals: %w", len(r.Accepts), len(r.Refused), ErrMalformed)
	}
	for i, b := range r.Accepts {
		why := r.Refused[i]
		switch {
		case len(b) > MaxReplyBytes || len(why) > MaxRefusalLen:
			return fmt.Errorf("acceptance of %d bytes, refusal of %d: %w", len(b), len(why), ErrMalformed)
		case (len(b) == 0) == (why == ""):
			return fmt.Errorf("confirm %d neither accepted nor refused, or both: %w", i, ErrMalformed)
		}
	}
	return nil
}

// RefusalText is err as a many-job answer gives one job's refusal: its
// text within MaxRefusalLen, "refused" when it has none.
func RefusalText(err error) string {
	msg := err.Error()
	if len(msg) > MaxRefusalLen {
		msg = msg[:MaxRefusalLen]
	}
	if msg == "" {
		msg = "refused"
	}
	return msg
}
