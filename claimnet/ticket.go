package claimnet

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/dht/keyspace"
	upjob "github.com/up-pool/up/job"
)

// ErrNoTicket refuses a claim request without a valid ticket from one of
// the client's record nodes, on a node that requires one
// (Config.RequireTicket).
var ErrNoTicket = errors.New("no valid quota ticket from the client's record nodes")

// checkTicket checks a claim request's ticket: a claim.Signed of kind
// Ticket for this job and client, naming the job's place (place: its
// position, when this node holds the job), signed by a node certificate
// of the CA bound to the node it names (as a confirm's replies are),
// that node among the r + claim.NearExtra nearest to the client's
// credit key in this node's view, and dated within T_skew of this
// node's clock.
func (s *Service) checkTicket(ticket, job, client []byte, place *keyspace.Pos, now time.Time) error {
	sigs := newBatch(1)
	if err := s.checkTicketQueued(ticket, job, client, place, now, sigs); err != nil {
		return err
	}
	if bad := sigs.verify(); bad >= 0 {
		return fmt.Errorf("%w: %w", ErrNoTicket, claim.ErrBadSignature)
	}
	return nil
}

// checkTicketQueued is checkTicket with the ticket's signature queued on
// sigs for the caller to verify (with other tickets: those of one record
// node's batch share one signature, verified once).
func (s *Service) checkTicketQueued(ticket, job, client []byte, place *keyspace.Pos, now time.Time, sigs *batch) error {
	if len(ticket) == 0 {
		return fmt.Errorf("%w: the request carries none", ErrNoTicket)
	}
	r, err := s.checkReply(0, ticket, job, client, now, sigs)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoTicket, err)
	}
	nowMS := now.UnixMilli()
	switch {
	case r.Kind != claim.Ticket:
		return fmt.Errorf("%w: a %s reply, not a ticket", ErrNoTicket, r.Kind)
	case r.At > nowMS+s.cfg.TSkew.Milliseconds() || r.At < nowMS-s.cfg.TSkew.Milliseconds():
		return fmt.Errorf("%w: dated %s from this node's clock (at most %s)", ErrNoTicket,
			time.Duration(r.At-nowMS)*time.Millisecond, s.cfg.TSkew)
	}
	if place != nil {
		// The record node audits the job's report at the place the
		// ticket names: it must be where this node holds the job.
		_, st, _ := claim.Decode(ticket) // decoded by checkReply already
		if named := keyspace.KeyPos(upjob.LookupKey(job, st.Place)); named != *place {
			return fmt.Errorf("%w: it names another place than the job's", ErrNoTicket)
		}
	}
	pos := keyspace.KeyPos(credit.Key(ed25519.PublicKey(client)))
	near, _ := nearRule(s.d, pos, nowMS-s.started, s.cfg.Warmup.Milliseconds())
	if !near(r.Node) {
		return fmt.Errorf("%w: node %s is not among the client's record nodes here", ErrNoTicket, peer.ID(r.Node))
	}
	return nil
}
