package wire

import "fmt"

// The many-job claim protocols with their signed replies shared
// (SharedReplies): the same requests and answers as ProtoClaimMany and
// ProtoConfirmMany, each signature's certificate, position record and
// signature written once. A node serves both versions; a client asks
// the shared one and falls back to the first where a node does not
// serve it. Each message converts to and from its first version's
// (Unshared, Share…), which the node decides on as before.
const (
	// ProtoClaimManyShared is ProtoClaimMany with its tickets and replies
	// shared.
	ProtoClaimManyShared = "/up/claim/many/2.0.0"
	// ProtoConfirmManyShared is ProtoConfirmMany with the gathered replies
	// and the acceptances shared.
	ProtoConfirmManyShared = "/up/claim/confirm/many/2.0.0"
)

// ClaimManySharedRequest is a ClaimManyRequest whose tickets (none, or
// one per job in order) are shared.
type ClaimManySharedRequest struct {
	_       struct{} `cbor:",toarray"`
	Jobs    [][]byte
	Tickets SharedReplies
}

// Validate bounds a decoded ClaimManySharedRequest (Unshared checks the
// request it rebuilds as ClaimManyRequest's Validate does).
func (r *ClaimManySharedRequest) Validate() error {
	if n := len(r.Tickets.Replies); n != 0 && n != len(r.Jobs) {
		return fmt.Errorf("claim of %d jobs with %d tickets: %w", len(r.Jobs), n, ErrMalformed)
	}
	return r.Tickets.Validate()
}

// Unshared is the request as ProtoClaimMany carries it, validated.
func (r *ClaimManySharedRequest) Unshared() (*ClaimManyRequest, error) {
	tickets, err := r.Tickets.Expand()
	if err != nil {
		return nil, err
	}
	req := &ClaimManyRequest{Jobs: r.Jobs}
	if len(tickets) > 0 {
		req.Tickets = tickets
	}
	return req, req.Validate()
}

// ShareClaimManyRequest is req with its tickets shared.
func ShareClaimManyRequest(req *ClaimManyRequest) (*ClaimManySharedRequest, error) {
	tickets, err := ShareReplies(req.Tickets)
	if err != nil {
		return nil, err
	}
	return &ClaimManySharedRequest{Jobs: req.Jobs, Tickets: tickets}, nil
}

// ClaimManySharedResponse is a ClaimManyResponse whose replies are
// shared.
type ClaimManySharedResponse struct {
	_       struct{} `cbor:",toarray"`
	Replies SharedReplies
}

// Validate bounds a decoded ClaimManySharedResponse.
func (r *ClaimManySharedResponse) Validate() error { return r.Replies.Validate() }

// Unshared is the response as ProtoClaimMany carries it, validated.
func (r *ClaimManySharedResponse) Unshared() (*ClaimManyResponse, error) {
	replies, err := r.Replies.Expand()
	if err != nil {
		return nil, err
	}
	resp := &ClaimManyResponse{Replies: replies}
	return resp, resp.Validate()
}

// ShareClaimManyResponse is resp with its replies shared.
func ShareClaimManyResponse(resp *ClaimManyResponse) (*ClaimManySharedResponse, error) {
	replies, err := ShareReplies(resp.Replies)
	if err != nil {
		return nil, err
	}
	return &ClaimManySharedResponse{Replies: replies}, nil
}

// ConfirmShared is one confirm of a ConfirmManySharedRequest: the job,
// the claim's start (Unix ms) and how many of the request's shared
// replies, taken in order after the previous confirm's, are its own.
type ConfirmShared struct {
	_       struct{} `cbor:",toarray"`
	Job     []byte
	Start   int64
	Replies uint16
}

// ConfirmManySharedRequest is a ConfirmManyRequest whose replies are
// shared: Items' replies, in order, are Replies'.
type ConfirmManySharedRequest struct {
	_       struct{} `cbor:",toarray"`
	Items   []ConfirmShared
	Replies SharedReplies
}

// Validate bounds a decoded ConfirmManySharedRequest: 1 to MaxClaimMany
// confirms of 1 to MaxReplies replies each, all the shared replies used.
func (r *ConfirmManySharedRequest) Validate() error {
	if len(r.Items) == 0 || len(r.Items) > MaxClaimMany {
		return fmt.Errorf("confirm of %d jobs: %w", len(r.Items), ErrMalformed)
	}
	sum := 0
	for i := range r.Items {
		n := int(r.Items[i].Replies)
		if n == 0 || n > MaxReplies {
			return fmt.Errorf("confirm with %d replies: %w", n, ErrMalformed)
		}
		sum += n
	}
	if sum != len(r.Replies.Replies) {
		return fmt.Errorf("confirms of %d replies with %d shared: %w", sum, len(r.Replies.Replies), ErrMalformed)
	}
	return r.Replies.Validate()
}

// Unshared is the request as ProtoConfirmMany carries it, validated.
func (r *ConfirmManySharedRequest) Unshared() (*ConfirmManyRequest, error) {
	replies, err := r.Replies.Expand()
	if err != nil {
		return nil, err
	}
	req := &ConfirmManyRequest{Items: make([]ConfirmRequest, len(r.Items))}
	for i, it := range r.Items {
		n := int(it.Replies)
		if n > len(replies) {
			return nil, fmt.Errorf("confirm %d of %d replies, %d left: %w", i, n, len(replies), ErrMalformed)
		}
		req.Items[i] = ConfirmRequest{Job: it.Job, Start: it.Start, Replies: replies[:n:n]}
		replies = replies[n:]
	}
	return req, req.Validate()
}

// ShareConfirmManyRequest is req with its replies shared.
func ShareConfirmManyRequest(req *ConfirmManyRequest) (*ConfirmManySharedRequest, error) {
	var all [][]byte
	out := &ConfirmManySharedRequest{Items: make([]ConfirmShared, len(req.Items))}
	for i, it := range req.Items {
		if len(it.Replies) > MaxReplies {
			return nil, fmt.Errorf("share a confirm of %d replies: at most %d", len(it.Replies), MaxReplies)
		}
		out.Items[i] = ConfirmShared{Job: it.Job, Start: it.Start, Replies: uint16(len(it.Replies))}
		all = append(all, it.Replies...)
	}
	var err error
	out.Replies, err = ShareReplies(all)
	return out, err
}

// ConfirmManySharedResponse is a ConfirmManyResponse whose acceptances
// are shared: Refused says, for each confirm in order, why it was
// refused, or "" where it was accepted, its acceptance the next of
// Accepts.
type ConfirmManySharedResponse struct {
	_       struct{} `cbor:",toarray"`
	Accepts SharedReplies
	Refused []string
}

// Validate bounds a decoded ConfirmManySharedResponse: one acceptance
// for each confirm not refused.
func (r *ConfirmManySharedResponse) Validate() error {
	if len(r.Refused) == 0 || len(r.Refused) > MaxClaimMany {
		return fmt.Errorf("confirm response for %d confirms: %w", len(r.Refused), ErrMalformed)
	}
	accepted := 0
	for _, why := range r.Refused {
		if len(why) > MaxRefusalLen {
			return fmt.Errorf("refusal of %d bytes: %w", len(why), ErrMalformed)
		}
		if why == "" {
			accepted++
		}
	}
	if accepted != len(r.Accepts.Replies) {
		return fmt.Errorf("confirm response with %d accepted and %d acceptances: %w", accepted, len(r.Accepts.Replies), ErrMalformed)
	}
	return r.Accepts.Validate()
}

// Unshared is the response as ProtoConfirmMany carries it, validated.
func (r *ConfirmManySharedResponse) Unshared() (*ConfirmManyResponse, error) {
	accepts, err := r.Accepts.Expand()
	if err != nil {
		return nil, err
	}
	resp := &ConfirmManyResponse{Accepts: make([][]byte, len(r.Refused)), Refused: r.Refused}
	for i, why := range r.Refused {
		if why != "" {
			continue
		}
		if len(accepts) == 0 {
			return nil, fmt.Errorf("confirm response: acceptance %d missing: %w", i, ErrMalformed)
		}
		resp.Accepts[i], accepts = accepts[0], accepts[1:]
	}
	return resp, resp.Validate()
}

// ShareConfirmManyResponse is resp with its acceptances shared.
func ShareConfirmManyResponse(resp *ConfirmManyResponse) (*ConfirmManySharedResponse, error) {
	var accepts [][]byte
	for i, b := range resp.Accepts {
		if resp.Refused[i] == "" {
			accepts = append(accepts, b)
		}
	}
	shared, err := ShareReplies(accepts)
	if err != nil {
		return nil, err
	}
	return &ConfirmManySharedResponse{Accepts: shared, Refused: resp.Refused}, nil
}
