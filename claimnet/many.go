package claimnet

import (
	"context"
	"fmt"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/wire"
)

// Several jobs per request (wire.ProtoClaimMany, ProtoConfirmMany): a
// client claiming jobs of one place asks each of their nodes once for
// all of them. Each job is decided exactly as a claim or confirm of it
// alone would be (grant, checkReplies, confirmChecked); what is shared
// is the message and the signature: the node signs its statements for
// the request as one batch (claim.SignBatch), and verifies each batch
// root the confirm's replies carry once.
//
// Who may lie: the client (a job twice, tickets that do not pair, more
// jobs than the bound: refused by wire's Validate; a forged reply for one
// job refuses that job's confirm and is attributed as for one job); the
// other nodes whose replies it carries (a batch path that leads nowhere
// fails that reply, as a bad signature does). Rate: a request is charged
// one token per job it names, so a client's claims per second at a node
// are what they were one job per request.

// handleClaimMany answers a claim of several jobs: a statement for each,
// in the request's order, under one signature. Every ticket must pass
// (when tickets are required), or the request is refused whole, as a
// claim of one job without its ticket is.
func (s *Service) handleClaimMany(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.ClaimManyRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return s.claimMany(from, &req)
}

// handleClaimManyShared answers wire.ProtoClaimManyShared: the request
// rebuilt as ProtoClaimMany's (its tickets checked as sent that way),
// answered as that one is, the replies shared.
func (s *Service) handleClaimManyShared(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var shared wire.ClaimManySharedRequest
	if err := wire.Decode(body, &shared); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	req, err := shared.Unshared()
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	resp, err := s.claimMany(from, req)
	if err != nil {
		return nil, err
	}
	return wire.ShareClaimManyResponse(resp)
}

// claimMany is handleClaimMany's answer to a decoded request.
func (s *Service) claimMany(from *overlay.Admitted, req *wire.ClaimManyRequest) (*wire.ClaimManyResponse, error) {
	client := []byte(from.Identity.PublicKey)
	if !s.limiter.AllowN(string(client), len(req.Jobs)) {
		return nil, overlay.StatusErr(wire.StatusRateLimited, fmt.Errorf("claims from client %q over %.0f/s", from.Identity.Name, s.cfg.Limit))
	}
	if err := s.requireTickets(req.Jobs, req.Tickets, client, from.Identity.Name); err != nil {
		return nil, err
	}
	now := s.now().UnixMilli()
	sts := make([]claim.Statement, len(req.Jobs))
	for i, key := range req.Jobs {
		sts[i] = s.grant(key, client, now)
	}
	replies, err := claim.SignBatch(sts, s.id.Cert.Raw, s.id.Position.Marshal(), s.id.PeerSign)
	if err != nil {
		return nil, err
	}
	for _, b := range replies {
		s.own.add(b, now)
	}
	return &wire.ClaimManyResponse{Replies: replies}, nil
}

// requireTickets is requireTicket for every job of a many-claim, their
// signatures verified together (a record node's tickets for the jobs
// share one): any ticket that fails refuses the request.
func (s *Service) requireTickets(keys, tickets [][]byte, client []byte, name string) error {
	if !s.cfg.RequireTicket {
		return nil
	}
	now := s.now()
	sigs := newBatch(len(keys))
	for i, key := range keys {
		var ticket []byte
		if len(tickets) > 0 {
			ticket = tickets[i]
		}
		var place *keyspace.Pos // the held job's: the ticket must name it
		if h, held := s.pool.Lookup(key); held {
			place = &h.Pos
		}
		if err := s.checkTicketQueued(ticket, key, client, place, now, sigs); err != nil {
			s.why.add("deny: no ticket")
			return overlay.StatusErr(wire.StatusQuota, fmt.Errorf("claim of job %x by %q: %w", key, name, err))
		}
	}
	if sigs.verify() >= 0 {
		s.why.add("deny: no ticket")
		return overlay.StatusErr(wire.StatusQuota, fmt.Errorf("claims by %q: %w: %w", name, ErrNoTicket, claim.ErrBadSignature))
	}
	return nil
}

// confirmItem is one confirm of a many-job confirm as it is checked.
type confirmItem struct {
	req     *wire.ConfirmRequest
	held    pool.Held
	replies []claim.Reply
	sigs    *batch
	start   int64 // the accepted claim's start
	err     error // its refusal
}

// handleConfirmMany answers a confirm of several jobs: an acceptance for
// each confirm that passes (one signature over them all), the reason
// for each that does not. The replies' signatures are verified together,
// each batch root once; should any fail, each confirm's are verified
// apart, so that only the confirms carrying a bad one are refused.
func (s *Service) handleConfirmMany(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.ConfirmManyRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	return s.confirmMany(from, &req)
}

// handleConfirmManyShared answers wire.ProtoConfirmManyShared: the
// confirms rebuilt as ProtoConfirmMany's, each reply byte for byte as
// its node signed it and checked as before, answered as there, the
// acceptances shared.
func (s *Service) handleConfirmManyShared(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var shared wire.ConfirmManySharedRequest
	if err := wire.Decode(body, &shared); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	req, err := shared.Unshared()
	if err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	resp, err := s.confirmMany(from, req)
	if err != nil {
		return nil, err
	}
	return wire.ShareConfirmManyResponse(resp)
}

// confirmMany is handleConfirmMany's answer to a decoded request.
func (s *Service) confirmMany(from *overlay.Admitted, req *wire.ConfirmManyRequest) (*wire.ConfirmManyResponse, error) {
	client := []byte(from.Identity.PublicKey)
	now := s.now()
	nowMS := now.UnixMilli()
	items := make([]confirmItem, len(req.Items))
	all := newBatch(4 * len(req.Items))
	for i := range req.Items {
		it := &items[i]
		it.req = &req.Items[i]
		h, held := s.pool.Lookup(it.req.Job)
		if !held {
			it.err = fmt.Errorf("job %x not held here", it.req.Job)
			continue
		}
		it.held, it.sigs = h, newBatch(len(it.req.Replies))
		if it.replies, it.err = s.checkReplies(it.req, from, client, now, it.sigs); it.err == nil {
			all.addAll(it.sigs)
		}
	}
	if all.verify() >= 0 {
		for i := range items {
			if it := &items[i]; it.err == nil {
				it.err = s.verifyReplies(it.req, from, it.replies, it.sigs)
			}
		}
	}
	var accepted []claim.Statement
	for i := range items {
		it := &items[i]
		if it.err == nil {
			it.start, it.err = s.confirmChecked(it.req, it.held, client, it.replies, nowMS)
		}
		if it.err == nil {
			accepted = append(accepted, claim.Statement{Kind: claim.Accepted, Job: it.req.Job, Client: client, Node: []byte(s.ep.ID()), At: nowMS, Start: it.start})
		}
	}
	signed, err := claim.SignBatch(accepted, s.id.Cert.Raw, s.id.Position.Marshal(), s.id.PeerSign)
	if err != nil {
		return nil, fmt.Errorf("sign acceptances: %w", err)
	}
	resp := &wire.ConfirmManyResponse{Accepts: make([][]byte, len(items)), Refused: make([]string, len(items))}
	for i := range items {
		if items[i].err != nil {
			resp.Refused[i] = wire.RefusalText(items[i].err)
			continue
		}
		resp.Accepts[i], signed = signed[0], signed[1:]
	}
	return resp, nil
}
