package claimclient

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/wire"
)

// ErrOverQuota reports that the client's record node refused it a ticket:
// it holds its quota of jobs in progress (package quota). It gets one
// again when a job it holds ends (Report) or its hold lapses.
var ErrOverQuota = errors.New("over its quota of jobs in progress")

// reportFlush is how long a report of a job's end waits for the next
// ticket request to the same record node to carry it, before it is sent
// with the others queued for that node (FlushReports).
const reportFlush = 5 * time.Second

// tickets is what the claimer keeps of its quota tickets.
type tickets struct {
	hold     time.Duration                  // how long a ticket holds a job at the record node (0: no tickets)
	from     map[string]peer.ID             // by job key: the record node that gave its ticket
	given    map[string][]byte              // by job key: the ticket, while claiming
	queued   map[peer.ID][]wire.QuotaReport // reports not sent yet, unsigned (sign signs a copy where needed), by the record node they go to
	flushing bool                           // a flush of queued is scheduled
	// old holds the record nodes that answered they do not serve
	// wire.ProtoQuotaTicketManyOwn (older versions, or one starting up),
	// with when: they get the old request, its reports signed, for
	// oldFor, then are asked the new way again. Bounded: forgotten at
	// maxOldNodes.
	old map[peer.ID]time.Time
	// oldReports is old for wire.ProtoQuotaReportManyOwn: the record
	// nodes that get a flush's reports one by one, signed.
	oldReports map[peer.ID]time.Time
	// quota is the client's quota of jobs in progress as its record
	// nodes last showed it (0: not learned yet, quota.DefaultInitial
	// assumed): what the last many-ticket answer said
	// (wire.QuotaTicketManyResponse.Quota), else the jobs it held when
	// one refused it a ticket, or the most it held after one gave them
	// (TicketRoom).
	quota int
}

// TicketRoom is how many more jobs the client may claim now as far as
// the claimer knows: its quota as its record nodes last showed it, less
// the jobs it holds tickets for; at least 1, so that a quota that grew
// shows itself; -1 without tickets (no bound). A client claiming several
// jobs at once asks for no more (a ticket refused for the quota wastes
// the job's vetting and holds its index entry back from others).
func (c *Claimer) TicketRoom() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tk.hold <= 0 || c.key == nil {
		return -1
	}
	q := c.tk.quota
	if q == 0 {
		q = quota.DefaultInitial
	}
	return max(q-len(c.tk.from), 1)
}

// learnQuotaLocked updates the quota estimate after a ticket request:
// refused says the record node had room for no more. c.mu is held.
func (c *Claimer) learnQuotaLocked(refused bool) {
	if refused {
		c.tk.quota = max(len(c.tk.from), 1)
		return
	}
	c.tk.quota = max(c.tk.quota, len(c.tk.from))
}

// SetTickets makes the claimer ask one of the client's record nodes (the
// r closest to its credit key) for a ticket before it claims a job,
// holding the job there for hold (the job's T_finish, say), and send the
// ticket with its claim requests. It needs the signer (SetSigner), which
// also signs the reports that go where a signature is needed (Report).
// Set it before the first claim.
func (c *Claimer) SetTickets(hold time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tk.hold = hold
	c.tk.from = map[string]peer.ID{}
	c.tk.given = map[string][]byte{}
	c.tk.queued = map[peer.ID][]wire.QuotaReport{}
	c.tk.old = map[peer.ID]time.Time{}
	c.tk.oldReports = map[peer.ID]time.Time{}
}

// maxOldNodes bounds tickets.old; oldFor is how long a record node that
// did not serve wire.ProtoQuotaTicketManyOwn is asked the old way before
// it is asked the new way again (it may have been starting, or been
// upgraded since).
const (
	maxOldNodes = 1 << 12
	oldFor      = 10 * time.Minute
)

// ticket asks the client's record nodes, nearest first, for a ticket to
// claim jobKey, placed at place (the ticket names it); nil without
// tickets. A record node that refuses for the
// quota ends it with ErrOverQuota; when none answers the claim goes on
// without a ticket (nodes that require one refuse it).
func (c *Claimer) ticket(ctx context.Context, jobKey, place []byte) ([]byte, error) {
	c.mu.Lock()
	hold := c.tk.hold
	c.mu.Unlock()
	if hold <= 0 || c.key == nil {
		return nil, nil
	}
	key := credit.Key(c.key.Public().(ed25519.PublicKey))
	nodes, err := c.d.ClosestPeers(ctx, key)
	if err != nil {
		return nil, nil
	}
	for _, n := range nodes {
		req := &wire.QuotaTicketRequest{Job: jobKey, HoldMS: hold.Milliseconds(), Reports: c.signReports(c.queuedFor(n))}
		if !bytes.Equal(place, jobKey) {
			req.Place = place
		}
		var resp wire.QuotaTicketResponse
		actx, cancel := context.WithTimeout(ctx, c.ask)
		err := c.ep.Call(actx, n, wire.ProtoQuotaTicket, req, wire.MaxQuotaTicketReply, &resp)
		cancel()
		var we *wire.Error
		switch {
		case err == nil:
			c.mu.Lock()
			c.tk.from[string(jobKey)] = n
			c.sentLocked(n, req.Reports)
			c.learnQuotaLocked(false)
			c.mu.Unlock()
			return resp.Ticket, nil
		case errors.As(err, &we) && we.Status == wire.StatusQuota:
			c.mu.Lock()
			c.sentLocked(n, req.Reports) // applied before the refusal
			c.learnQuotaLocked(true)
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", ErrOverQuota, err)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
	}
	c.d.Invalidate(key)
	return nil, nil
}

// Report tells the client's record node that gave jobKey's ticket how the
// job ended; nothing without tickets. A failure is signed by the client
// and sent at once (that node forwards it to the client's other record
// nodes); a job done or released rides on the next ticket request to
// that node, or goes with the others queued for it after reportFlush
// (FlushReports). It is queued unsigned and signed only if it goes a way
// that needs the signature: alone, in a single ticket request, or to a
// record node of an older version (ticketsFor); a many-ticket request
// (wire.ProtoQuotaTicketManyOwn) and a flush
// (wire.ProtoQuotaReportManyOwn) carry it unsigned, over the client's
// own authenticated connection.
func (c *Claimer) Report(ctx context.Context, jobKey []byte, outcome quota.Outcome) error {
	c.mu.Lock()
	n, ok := c.tk.from[string(jobKey)]
	delete(c.tk.from, string(jobKey))
	c.mu.Unlock()
	if !ok || c.key == nil {
		return nil
	}
	rep := wire.QuotaReport{Client: c.key.Public().(ed25519.PublicKey), Job: jobKey, Outcome: uint8(outcome)}
	if outcome == quota.Failed {
		return c.sendReport(ctx, n, &rep)
	}
	c.mu.Lock()
	c.tk.queued[n] = append(c.tk.queued[n], rep)
	full := len(c.tk.queued[n]) >= wire.MaxQuotaReports
	schedule := !c.tk.flushing
	c.tk.flushing = true
	c.mu.Unlock()
	if full {
		return c.FlushReports(ctx)
	}
	if schedule {
		time.AfterFunc(reportFlush, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 4*c.ask)
			defer cancel()
			_ = c.FlushReports(ctx)
		})
	}
	return nil
}

// FlushReports sends every queued report now: each record node's in one
// wire.ProtoQuotaReportManyOwn request per MaxQuotaReports, unsigned
// (over the client's own connection, as on a many-ticket request); to a
// node known not to serve it, or that answers it does not, one signed
// report per request.
func (c *Claimer) FlushReports(ctx context.Context) error {
	c.mu.Lock()
	queued := c.tk.queued
	c.tk.queued = map[peer.ID][]wire.QuotaReport{}
	c.tk.flushing = false
	c.mu.Unlock()
	var errs []error
	for n, reps := range queued {
		for len(reps) > 0 {
			part := reps[:min(len(reps), wire.MaxQuotaReports)]
			reps = reps[len(part):]
			if err := c.sendReports(ctx, n, part); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// sendReports sends reps, unsigned, to record node n in one
// wire.ProtoQuotaReportManyOwn request, unless n is known not to serve
// it; then, or when n answers it does not, each on its own, signed.
func (c *Claimer) sendReports(ctx context.Context, n peer.ID, reps []wire.QuotaReport) error {
	now := c.now()
	if !c.isOld(c.tk.oldReports, n, now) {
		actx, cancel := context.WithTimeout(ctx, c.ask)
		var resp wire.Ping
		err := c.ep.Call(actx, n, wire.ProtoQuotaReportManyOwn, &wire.QuotaReportManyOwnRequest{Reports: reps}, 64, &resp)
		cancel()
		if !overlay.NotServed(err) {
			if err != nil {
				return fmt.Errorf("report %d jobs to record node %s: %w", len(reps), n, err)
			}
			return nil
		}
		c.markOld(c.tk.oldReports, n, now)
	}
	var errs []error
	for i := range reps {
		if err := c.sendReport(ctx, n, &reps[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// isOld reports whether record node n is in old (one of the claimer's
// memories of nodes that did not serve a protocol) since less than
// oldFor at now; a memory that old is forgotten, and n asked the new way
// again.
func (c *Claimer) isOld(old map[peer.ID]time.Time, n peer.ID, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	since, ok := old[n]
	if ok && now.Sub(since) >= oldFor {
		delete(old, n)
		ok = false
	}
	return ok
}

// markOld remembers in old that record node n did not serve a protocol
// at now; the memory starts afresh at maxOldNodes.
func (c *Claimer) markOld(old map[peer.ID]time.Time, n peer.ID, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(old) >= maxOldNodes {
		clear(old)
	}
	old[n] = now
}

func (c *Claimer) sendReport(ctx context.Context, n peer.ID, rep *wire.QuotaReport) error {
	c.sign(rep)
	actx, cancel := context.WithTimeout(ctx, c.ask)
	defer cancel()
	var resp wire.Ping
	if err := c.ep.Call(actx, n, wire.ProtoQuotaReport, rep, 64, &resp); err != nil {
		return fmt.Errorf("report job %x %s to record node %s: %w", rep.Job, quota.Outcome(rep.Outcome), n, err)
	}
	return nil
}

// sign signs rep with the client's key unless it is signed.
func (c *Claimer) sign(rep *wire.QuotaReport) {
	if rep.Unsigned() {
		rep.Sig = ed25519.Sign(c.key, wire.QuotaReportMessage(rep.Client, rep.Job, rep.Outcome))
	}
}

// signReports signs reps (a copy, as queuedFor returns) in place and
// returns them.
func (c *Claimer) signReports(reps []wire.QuotaReport) []wire.QuotaReport {
	for i := range reps {
		c.sign(&reps[i])
	}
	return reps
}

// askTickets sends a many-ticket request to record node n: as
// wire.ProtoQuotaTicketManyOwn, its reports unsigned, unless n is known
// not to serve it; then, or when n answers it does not, as
// wire.ProtoQuotaTicketMany with its reports signed. req.Reports is
// what n was sent.
func (c *Claimer) askTickets(ctx context.Context, n peer.ID, req *wire.QuotaTicketManyRequest, resp *wire.QuotaTicketManyResponse) error {
	now := c.now()
	const most = wire.MaxClaimMany * wire.MaxQuotaTicketReply
	if !c.isOld(c.tk.old, n, now) {
		actx, cancel := context.WithTimeout(ctx, c.ask)
		err := c.ep.Call(actx, n, wire.ProtoQuotaTicketManyOwn, (*wire.QuotaTicketManyOwnRequest)(req), most, resp)
		cancel()
		if !overlay.NotServed(err) {
			return err
		}
		c.markOld(c.tk.old, n, now)
	}
	c.signReports(req.Reports)
	actx, cancel := context.WithTimeout(ctx, c.ask)
	defer cancel()
	return c.ep.Call(actx, n, wire.ProtoQuotaTicketMany, req, most, resp)
}

// queuedFor is the reports queued for node n, at most MaxQuotaReports.
func (c *Claimer) queuedFor(n peer.ID) []wire.QuotaReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.tk.queued[n]
	return append([]wire.QuotaReport(nil), q[:min(len(q), wire.MaxQuotaReports)]...)
}

// sentLocked drops from n's queue the reports node n took (by job: a
// flush may have replaced the queue meanwhile). c.mu is held.
func (c *Claimer) sentLocked(n peer.ID, took []wire.QuotaReport) {
	if len(took) == 0 {
		return
	}
	done := make(map[string]bool, len(took))
	for _, r := range took {
		done[string(r.Job)] = true
	}
	q := slices.DeleteFunc(c.tk.queued[n], func(r wire.QuotaReport) bool { return done[string(r.Job)] })
	if len(q) == 0 {
		delete(c.tk.queued, n)
	} else {
		c.tk.queued[n] = q
	}
}

// ticketFor is the ticket for a claim attempt of jobKey, placed at place:
// the one given for an earlier attempt of this claim, or a new one.
func (c *Claimer) ticketFor(ctx context.Context, jobKey, place []byte) ([]byte, error) {
	c.mu.Lock()
	t, ok := c.tk.given[string(jobKey)]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := c.ticket(ctx, jobKey, place)
	if err != nil || t == nil {
		return t, err
	}
	c.mu.Lock()
	c.tk.given[string(jobKey)] = t
	c.mu.Unlock()
	return t, nil
}

// ticketDone forgets the ticket of a claim that ended: a claim not won
// gives its hold back at the record node (Report, Released) in the
// background; a won one keeps the node to report to when the job ends.
func (c *Claimer) ticketDone(jobKey []byte, err error) {
	c.mu.Lock()
	_, had := c.tk.given[string(jobKey)]
	delete(c.tk.given, string(jobKey))
	c.mu.Unlock()
	if !had || err == nil || errors.Is(err, ErrHeld) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*c.ask)
		defer cancel()
		_ = c.Report(ctx, jobKey, quota.Released)
	}()
}

// ticketsFor is ticketFor for several jobs of one place, asked of a
// record node in one request (askTickets) for the jobs
// not holding a ticket yet: each job's ticket (nil without tickets) or
// error (ErrOverQuota for the jobs the quota had no room for).
func (c *Claimer) ticketsFor(ctx context.Context, jobs [][]byte, place []byte) ([][]byte, []error) {
	tickets, errs := make([][]byte, len(jobs)), make([]error, len(jobs))
	c.mu.Lock()
	hold := c.tk.hold
	var ask []int // the jobs without a ticket yet
	for i, k := range jobs {
		if t, ok := c.tk.given[string(k)]; ok {
			tickets[i] = t
		} else {
			ask = append(ask, i)
		}
	}
	c.mu.Unlock()
	if hold <= 0 || c.key == nil || len(ask) == 0 {
		return tickets, errs
	}
	key := credit.Key(c.key.Public().(ed25519.PublicKey))
	nodes, err := c.d.ClosestPeers(ctx, key)
	if err != nil {
		return tickets, errs
	}
	for _, n := range nodes {
		req := &wire.QuotaTicketManyRequest{HoldMS: hold.Milliseconds(), Reports: c.queuedFor(n)}
		for _, i := range ask {
			req.Jobs = append(req.Jobs, jobs[i])
		}
		if !bytes.Equal(place, jobs[ask[0]]) {
			req.Place = place
		}
		var resp wire.QuotaTicketManyResponse
		err := c.askTickets(ctx, n, req, &resp)
		var we *wire.Error
		switch {
		case err == nil && len(resp.Tickets) != len(ask):
			continue // not an answer to this request: ask the next
		case err == nil:
			c.mu.Lock()
			c.sentLocked(n, req.Reports)
			partial := false
			for j, i := range ask {
				if t := resp.Tickets[j]; len(t) > 0 {
					tickets[i] = t
					c.tk.given[string(jobs[i])] = t
					c.tk.from[string(jobs[i])] = n
				} else {
					partial = true
					errs[i] = fmt.Errorf("%w: record node %s had room for %d of %d jobs", ErrOverQuota, n, j, len(ask))
				}
			}
			c.learnQuotaLocked(partial)
			if resp.Quota > 0 {
				// The record node's word: room next is this less the
				// jobs held (TicketRoom).
				c.tk.quota = int(resp.Quota)
			}
			c.mu.Unlock()
			return tickets, errs
		case errors.As(err, &we) && we.Status == wire.StatusQuota:
			c.mu.Lock()
			c.sentLocked(n, req.Reports) // applied before the refusal
			c.learnQuotaLocked(true)
			c.mu.Unlock()
			for _, i := range ask {
				errs[i] = fmt.Errorf("%w: %w", ErrOverQuota, err)
			}
			return tickets, errs
		case ctx.Err() != nil:
			for _, i := range ask {
				errs[i] = ctx.Err()
			}
			return tickets, errs
		}
	}
	c.d.Invalidate(key)
	return tickets, errs
}
