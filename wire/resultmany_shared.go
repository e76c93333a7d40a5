package wire

import "fmt"

// ProtoResultManyShared is ProtoResultMany with what its results share
// written once: the claim certificates' acceptances as SharedReplies
// (the jobs of a place were claimed together, so their certificates are
// the same nodes' batch-signed acceptances) and each distinct list of
// nodes sent to. A node serves both versions; a client asks this one
// and falls back to the first where a node does not serve it. The node
// rebuilds the first version's request (Unshared) and takes each result
// as before.
const ProtoResultManyShared = "/up/job/result/many/2.0.0"

// ResultShared is one result of a ResultManySharedRequest: its envelope
// and time as in ResultSubmit, the index of its list of nodes sent to in
// the request's Sent, its claim's start and how many of the request's
// shared acceptances, taken in order after the previous result's, are
// its certificate (0: none sent with it).
type ResultShared struct {
	_        struct{} `cbor:",toarray"`
	Envelope []byte
	At       int64
	Sent     uint16
	Start    int64
	Accepts  uint16
}

// ResultManySharedRequest is a ResultManyRequest whose lists of nodes
// sent to and certificates' acceptances are shared.
type ResultManySharedRequest struct {
	_       struct{} `cbor:",toarray"`
	Items   []ResultShared
	Sent    [][][]byte
	Accepts SharedReplies
}

// Validate bounds a decoded ResultManySharedRequest (Unshared checks
// the request it rebuilds as ResultManyRequest's Validate does).
func (r *ResultManySharedRequest) Validate() error {
	if len(r.Items) == 0 || len(r.Items) > MaxClaimMany || len(r.Sent) > len(r.Items) {
		return fmt.Errorf("results of %d jobs with %d lists of nodes: %w", len(r.Items), len(r.Sent), ErrMalformed)
	}
	sum := 0
	for i := range r.Items {
		it := &r.Items[i]
		if int(it.Sent) >= len(r.Sent) || int(it.Accepts) > MaxReplies {
			return fmt.Errorf("result %d naming node list %d of %d, %d acceptances: %w", i, it.Sent, len(r.Sent), it.Accepts, ErrMalformed)
		}
		sum += int(it.Accepts)
	}
	if sum != len(r.Accepts.Replies) {
		return fmt.Errorf("results of %d acceptances with %d shared: %w", sum, len(r.Accepts.Replies), ErrMalformed)
	}
	for _, list := range r.Sent {
		if len(list) > MaxResultSent {
			return fmt.Errorf("result sent to %d nodes, at most %d: %w", len(list), MaxResultSent, ErrMalformed)
		}
	}
	return r.Accepts.Validate()
}

// Unshared is the request as ProtoResultMany carries it, validated.
func (r *ResultManySharedRequest) Unshared() (*ResultManyRequest, error) {
	accepts, err := r.Accepts.Expand()
	if err != nil {
		return nil, err
	}
	req := &ResultManyRequest{Items: make([]ResultSubmit, len(r.Items))}
	for i, it := range r.Items {
		n := int(it.Accepts)
		if n > len(accepts) || int(it.Sent) >= len(r.Sent) {
			return nil, fmt.Errorf("result %d: %d acceptances of %d left, node list %d of %d: %w", i, n, len(accepts), it.Sent, len(r.Sent), ErrMalformed)
		}
		sub := ResultSubmit{Envelope: it.Envelope, At: it.At, Sent: r.Sent[it.Sent], Start: it.Start}
		if n > 0 {
			sub.Accepts = accepts[:n:n]
		}
		accepts = accepts[n:]
		req.Items[i] = sub
	}
	return req, req.Validate()
}

// ShareResultManyRequest is req with its lists of nodes and its
// certificates' acceptances shared.
func ShareResultManyRequest(req *ResultManyRequest) (*ResultManySharedRequest, error) {
	out := &ResultManySharedRequest{Items: make([]ResultShared, len(req.Items))}
	var accepts [][]byte
	for i, it := range req.Items {
		if len(it.Accepts) > MaxReplies {
			return nil, fmt.Errorf("share a certificate of %d acceptances: at most %d", len(it.Accepts), MaxReplies)
		}
		list := -1
		for j, l := range out.Sent {
			if sameIDs(l, it.Sent) {
				list = j
				break
			}
		}
		if list < 0 {
			list = len(out.Sent)
			out.Sent = append(out.Sent, it.Sent)
		}
		out.Items[i] = ResultShared{Envelope: it.Envelope, At: it.At, Sent: uint16(list), Start: it.Start, Accepts: uint16(len(it.Accepts))}
		accepts = append(accepts, it.Accepts...)
	}
	var err error
	out.Accepts, err = ShareReplies(accepts)
	return out, err
}

// sameIDs reports whether two lists of node IDs are the same, in order.
func sameIDs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}
