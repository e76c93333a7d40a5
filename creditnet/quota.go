package creditnet

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/sigverify"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// quotaNS is the store namespace of the quota book: key the client's
// key, value its quota.Account (storedAccount).
const quotaNS = "quota"

// loadQuota reads the stored accounts into the book.
func (s *Service) loadQuota() error {
	var bad int
	err := s.st.Scan(store.Key(quotaNS), func(k, v []byte) bool {
		a, err := decodeAccount(v)
		if err != nil {
			bad++
			return true
		}
		s.book.Restore(string(k[len(quotaNS)+1:]), a)
		return true
	})
	if err != nil {
		return fmt.Errorf("creditnet: load quota accounts: %w", err)
	}
	if bad > 0 {
		s.log.Warn("quota accounts left out at load", "count", bad)
	}
	return nil
}

// unsaved names the accounts a request changed, saved once when it is
// answered (Service.save): a request of n reports and n tickets wrote
// the client's account 2n times, each a JSON of its holds and reports.
// It also gathers the reports the request drew for audit, audited
// together by place once it is answered (auditDue).
type unsaved struct {
	clients []string
	due     auditDue
}

// mark adds client (once).
func (u *unsaved) mark(client string) {
	if !slices.Contains(u.clients, client) {
		u.clients = append(u.clients, client)
	}
}

// save writes the accounts u names; deferred by each handler, so what a
// request changed is written before its answer goes, and on an error
// return too.
func (s *Service) save(u *unsaved) {
	s.startAudits(&u.due)
	if len(u.clients) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range u.clients {
		s.saveQuotaLocked(c)
	}
}

// saveQuotaLocked writes client's account. s.mu is held.
func (s *Service) saveQuotaLocked(client string) {
	a := s.book.Account(client)
	if a == nil {
		return
	}
	b, err := encodeAccount(a)
	if err == nil {
		err = s.st.Put(store.Key(quotaNS, []byte(client)), b)
	}
	if err != nil {
		s.log.Error("save quota account", "err", err)
	}
}

// handleTicket applies the reports the request carries, then gives the
// calling client a ticket to claim a job when it holds fewer jobs than
// its quota here (quota.Book.Ticket). Only clients ask, for themselves.
func (s *Service) handleTicket(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.QuotaTicketRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("quota ticket: %w", err))
	}
	var saves unsaved
	defer s.save(&saves)
	if err := s.applyReports(from, req.Reports, &saves); err != nil {
		return nil, err
	}
	client := []byte(from.Identity.PublicKey)
	st, err := s.ticket(client, req.Job, req.Place, req.HoldMS, s.env.Now().UnixMilli(), &saves)
	if errors.Is(err, quota.ErrOverQuota) {
		s.mTickets.WithLabelValues("refused").Inc()
		return nil, overlay.StatusErr(wire.StatusQuota, fmt.Errorf("client %q: %w", from.Identity.Name, err))
	}
	if err != nil {
		return nil, err
	}
	signed, err := claim.Sign(st, s.id.Cert.Raw, s.id.Position.Marshal(), s.id.PeerSign)
	if err != nil {
		return nil, err
	}
	s.mTickets.WithLabelValues("given").Inc()
	return &wire.QuotaTicketResponse{Ticket: signed}, nil
}

// handleTicketMany is handleTicket for several jobs of one place: tickets
// for the first jobs the client's quota has room for, under one
// signature, none for the rest; refused (StatusQuota) when it has room
// for none.
func (s *Service) handleTicketMany(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.QuotaTicketManyRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("quota tickets: %w", err))
	}
	return s.ticketMany(from, &req)
}

// handleTicketManyOwn is handleTicketMany for wire.ProtoQuotaTicketManyOwn,
// whose done and released reports may come unsigned (applyReport).
func (s *Service) handleTicketManyOwn(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.QuotaTicketManyOwnRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("quota tickets: %w", err))
	}
	return s.ticketMany(from, (*wire.QuotaTicketManyRequest)(&req))
}

// ticketMany answers a decoded many-ticket request (handleTicketMany).
func (s *Service) ticketMany(from *overlay.Admitted, req *wire.QuotaTicketManyRequest) (any, error) {
	var saves unsaved
	defer s.save(&saves)
	if err := s.applyReports(from, req.Reports, &saves); err != nil {
		return nil, err
	}
	client := []byte(from.Identity.PublicKey)
	now := s.env.Now().UnixMilli()
	var sts []claim.Statement
	for _, k := range req.Jobs {
		st, err := s.ticket(client, k, req.Place, req.HoldMS, now, &saves)
		if errors.Is(err, quota.ErrOverQuota) {
			s.mTickets.WithLabelValues("refused").Inc()
			if len(sts) == 0 {
				return nil, overlay.StatusErr(wire.StatusQuota, fmt.Errorf("client %q: %w", from.Identity.Name, err))
			}
			break
		}
		if err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	signed, err := claim.SignBatch(sts, s.id.Cert.Raw, s.id.Position.Marshal(), s.id.PeerSign)
	if err != nil {
		return nil, err
	}
	s.mTickets.WithLabelValues("given").Add(float64(len(signed)))
	resp := &wire.QuotaTicketManyResponse{Tickets: make([][]byte, len(req.Jobs))}
	copy(resp.Tickets, signed)
	s.mu.Lock()
	if a := s.book.Account(string(client)); a != nil {
		resp.Quota = int64(a.Quota)
	}
	s.mu.Unlock()
	return resp, nil
}

// ticket holds job (placed at place, when not by its key) for client for
// holdMS at now (Unix ms), within its quota here (quota.Book.Ticket), and
// returns the ticket's statement; quota.ErrOverQuota when it has no room.
// The account is saved by the caller (saves).
func (s *Service) ticket(client, job, place []byte, holdMS, now int64, saves *unsaved) (claim.Statement, error) {
	s.mu.Lock()
	err := s.book.Ticket(string(client), string(job), holdMS, now)
	if err == nil {
		saves.mark(string(client))
		if len(place) > 0 {
			s.places.Put(ticketKey(client, job), place)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return claim.Statement{}, err
	}
	return claim.Statement{Kind: claim.Ticket, Job: job, Client: client, Node: []byte(s.ep.ID()), At: now, Place: place}, nil
}

// maxTicketPlaces bounds the ticket places a record node remembers for
// its audits (Service.places): a generation of them at most.
const maxTicketPlaces = 1 << 14

// ticketKey names a client's ticket for a job in Service.places.
func ticketKey(client, job []byte) string { return string(client) + "\x00" + string(job) }

// handleReport applies a client's signed report of how a job it held
// ended: from the client itself, or forwarded by another record node.
func (s *Service) handleReport(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.QuotaReport
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("quota report: %w", err))
	}
	var saves unsaved
	defer s.save(&saves)
	if err := s.applyReport(from, &req, false, &saves); err != nil {
		return nil, err
	}
	return &wire.Ping{}, nil
}

// handleReportMany applies the reports of a wire.ProtoQuotaReportManyOwn
// request, the client's own (its done and released reports may come
// unsigned; applyReports), and saves the client's account once: the
// reports a client queued for this node that no ticket request carried
// cost one request, one batch verification of those signed and one
// write, not one of each per job.
func (s *Service) handleReportMany(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.QuotaReportManyOwnRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("quota reports: %w", err))
	}
	var saves unsaved
	defer s.save(&saves)
	if err := s.applyReports(from, req.Reports, &saves); err != nil {
		return nil, err
	}
	return &wire.Ping{}, nil
}

// applyReports applies the reports a ticket request carries, in order,
// the signatures of those signed verified together first
// (sigverify.VerifyMany; an unsigned one, which only
// wire.ProtoQuotaTicketManyOwn lets through, applyReport judges); it
// stops at the first that fails, those before it applied. A batch judges
// signatures by RFC 8032's cofactored rule: it can take, under a key of
// mixed order, a signature Verify refuses — which only that key's client
// can make, about its own jobs.
func (s *Service) applyReports(from *overlay.Admitted, reports []wire.QuotaReport, saves *unsaved) error {
	pubs := make([]ed25519.PublicKey, 0, len(reports))
	msgs, sigs := make([][]byte, 0, len(reports)), make([][]byte, 0, len(reports))
	at := make([]int, 0, len(reports)) // the report of each signature
	for i, r := range reports {
		if r.Unsigned() { // applyReport judges it
			continue
		}
		pubs, msgs, sigs = append(pubs, r.Client), append(msgs, wire.QuotaReportMessage(r.Client, r.Job, r.Outcome)), append(sigs, r.Sig)
		at = append(at, i)
	}
	bad := -1
	if b := sigverify.VerifyMany(pubs, msgs, sigs); b >= 0 {
		bad = at[b]
	}
	for i := range reports {
		// The one that failed is checked again alone, for its error; so
		// is a failure, which is forwarded to record nodes that check it
		// alone (the batch's cofactored rule takes signatures under a
		// key of mixed order that Verify refuses: what this node applies
		// they must take too).
		signed := !reports[i].Unsigned() && i != bad && (bad < 0 || i < bad) && quota.Outcome(reports[i].Outcome) != quota.Failed
		if err := s.applyReport(from, &reports[i], signed, saves); err != nil {
			return err
		}
	}
	return nil
}

// applyReport checks a report (the client's own signature, from the
// client itself or a node; or none, for the client's own done or
// released report over its own connection) and applies it once per job.
// A failure the client sent itself is forwarded to the client's other
// record nodes, so its quota halves wherever it asks next. signed says
// the caller verified the client's signature (applyReports). The
// account is saved by the caller (saves).
func (s *Service) applyReport(from *overlay.Admitted, req *wire.QuotaReport, signed bool, saves *unsaved) error {
	direct := from.Role() == certs.RoleClient
	switch {
	case direct && string(req.Client) != string(from.Identity.PublicKey):
		return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("quota report: client %q reports for another client", from.Identity.Name))
	case !direct && from.Role() != certs.RoleNode:
		return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("quota report from a %s", from.Role()))
	case req.Unsigned() && (!direct || quota.Outcome(req.Outcome) == quota.Failed):
		// Only the client's own done or released report, over its own
		// connection, goes unsigned: a failure is forwarded, and a node
		// forwards nothing unsigned.
		return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("quota report of job %x: unsigned, and not the client's own done or released report", req.Job))
	case !req.Unsigned() && !signed && !sigverify.Verify(req.Client, wire.QuotaReportMessage(req.Client, req.Job, req.Outcome), req.Sig):
		return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("quota report of job %x: the client's signature does not verify", req.Job))
	}
	outcome := quota.Outcome(req.Outcome)
	s.mu.Lock()
	changed := s.book.Report(string(req.Client), string(req.Job), outcome)
	if changed {
		saves.mark(string(req.Client))
	}
	if changed && direct && outcome != quota.Failed && s.auditDueLocked() {
		s.dueLocked(&saves.due, req)
	}
	s.mu.Unlock()
	s.mReports.WithLabelValues(outcome.String()).Inc()
	if changed && direct && outcome == quota.Failed {
		s.forwardReport(req)
	}
	return nil
}

// forwardReport sends a failure report to the client's other record
// nodes in the view of this one, in the background.
func (s *Service) forwardReport(req *wire.QuotaReport) {
	pos := keyspace.KeyPos(credit.Key(ed25519.PublicKey(req.Client)))
	self := s.ep.ID()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for _, p := range s.dht.NearestUnmarked(pos, s.r) {
			if p == self {
				continue
			}
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RPCTimeout)
			var resp wire.Ping
			if err := s.ep.Call(ctx, p, wire.ProtoQuotaReport, req, 64, &resp); err != nil {
				s.log.Debug("forward quota report", "to", p, "err", err)
			}
			cancel()
		}
	}()
}

// creditQuotaLocked raises client's quota for n valid results a new receipt
// credits. s.mu is held.
func (s *Service) creditQuotaLocked(client string, n int) {
	s.book.Credit(client, n)
	s.saveQuotaLocked(client)
}

// Quota is client's quota here and the jobs it holds tickets for now.
func (s *Service) Quota(client []byte) (q, held int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.book.Account(string(client))
	if a == nil {
		return s.book.Config().Initial, 0
	}
	now := s.env.Now().UnixMilli()
	for _, end := range a.Held {
		if now < end {
			held++
		}
	}
	return a.Quota, held
}

// Account is a copy of client's account here, nil when none.
func (s *Service) Account(client []byte) *quota.Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.book.Account(string(client))
	if a == nil {
		return nil
	}
	c := *a
	c.Held = maps.Clone(a.Held)
	c.Reported = slices.Clone(a.Reported)
	return &c
}
