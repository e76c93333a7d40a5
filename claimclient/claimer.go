package claimclient

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/recent"
	"github.com/up-pool/up/wire"
)

// Claimer is the client side: it claims jobs on their closest nodes.
type Claimer struct {
	ep         *overlay.Endpoint
	d          *dht.DHT
	now        func() time.Time
	extra      int
	ask        time.Duration                        // how long one node has to answer a claim request or confirm
	pace       func(context.Context, peer.ID) error // before each claim request; nil: none
	retry      submitRetry                          // how a result's delivery is retried
	key        ed25519.PrivateKey                   // signs releases (SetSigner); nil: unsigned
	tk         tickets                              // quota tickets (ticket.go); guarded by mu
	commitPoll time.Duration                        // first pause between counts of a unit's commitments (commit.go)
	// certDelay is how long a won claim's certificate waits for its
	// result (certify.go); DefaultCertifyDelay unless certDelaySet.
	certDelay    time.Duration
	certDelaySet bool

	won, lost, unknown, failed, lookups atomic.Int64
	refreshes, attempts                 atomic.Int64

	mu   sync.Mutex
	mine map[string]bool // jobs being claimed or held by this claimer
	// releasing holds, per job whose release is on its way to the nodes, a
	// channel closed when it is done: a new claim of the job waits for it.
	releasing map[string]chan struct{}
	starts    *recent.Map[string, int64] // the latest claim start used per job, Unix ms (startsRemembered)
	unshared  map[peer.ID]bool           // nodes that do not serve the shared many-job protocols (shared.go)
}

// ErrHeld reports a job this claimer is already claiming or holds (for
// another of the client's slots): claiming it again would confirm the
// same claim twice, and giving the second up would release the first.
var ErrHeld = errors.New("job already claimed or being claimed by this client")

// take marks a job as this claimer's; false when it already is. A job
// whose release is under way is waited for (until ctx ends): the index may
// serve the job again the moment the nodes have the release, before the
// release returned here, and refusing it then would leave the entry
// quarantined with nobody claiming it.
func (c *Claimer) take(ctx context.Context, jobKey []byte) bool {
	for {
		c.mu.Lock()
		if !c.mine[string(jobKey)] {
			if c.mine == nil {
				c.mine = map[string]bool{}
			}
			c.mine[string(jobKey)] = true
			c.mu.Unlock()
			return true
		}
		done := c.releasing[string(jobKey)]
		c.mu.Unlock()
		if done == nil {
			return false
		}
		select {
		case <-done:
		case <-ctx.Done():
			return false
		}
	}
}

// releaseStarted marks the job's release as under way.
func (c *Claimer) releaseStarted(jobKey []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.releasing == nil {
		c.releasing = map[string]chan struct{}{}
	}
	if c.releasing[string(jobKey)] == nil {
		c.releasing[string(jobKey)] = make(chan struct{})
	}
}

// drop forgets a job: its claim was lost, released or its result stored.
func (c *Claimer) drop(jobKey []byte) {
	c.mu.Lock()
	delete(c.mine, string(jobKey))
	if done := c.releasing[string(jobKey)]; done != nil {
		close(done)
		delete(c.releasing, string(jobKey))
	}
	c.mu.Unlock()
}

// Stats count a claimer's attempts by outcome (a job refused with ErrHeld
// is no attempt), and the lookups it made because no usable replica set
// was hinted.
type Stats struct {
	Won     int `json:"won"`
	Lost    int `json:"lost"`    // another client held the job: too many nodes denied for a quorum
	Unknown int `json:"unknown"` // no node held the job
	Failed  int `json:"failed"`  // too few answers, a refused confirm, or an error
	Lookups int `json:"lookups"` // DHT lookups of a job's nodes
	// Refreshes are the near questions that replaced a stale hint.
	Refreshes int `json:"refreshes"`
	// Attempts are the claim attempts over a set of nodes: one Claim
	// call makes up to three (the hint, its near refresh, a lookup's),
	// and counts once above by its last.
	Attempts int `json:"attempts"`
}

// Stats reports the attempts made so far.
func (c *Claimer) Stats() Stats {
	return Stats{
		Won: int(c.won.Load()), Lost: int(c.lost.Load()), Unknown: int(c.unknown.Load()),
		Failed: int(c.failed.Load()), Lookups: int(c.lookups.Load()),
		Refreshes: int(c.refreshes.Load()), Attempts: int(c.attempts.Load()),
	}
}

// count records an attempt's outcome.
func (c *Claimer) count(err error) {
	switch {
	case err == nil:
		c.won.Add(1)
	case errors.Is(err, ErrLost):
		c.lost.Add(1)
	case errors.Is(err, ErrUnknown):
		c.unknown.Add(1)
	default:
		c.failed.Add(1)
	}
}

// DefaultAskTimeout is how long one node has to answer a claim request or
// a confirm before the claimer goes on without it: sized for wide-area
// links — a new connection (TCP, Noise, the hello) takes about four round
// trips, 1.2 s at an intercontinental 300 ms, and the answer one more plus
// two signatures — with room for a loaded node, yet far below T_claim
// (15 s), so a silent replica costs an attempt seconds, not its grants.
const DefaultAskTimeout = 3 * time.Second

// NewClaimer returns a claimer for a client's endpoint and DHT. extra is
// how many nodes beyond r it keeps in reserve for nodes that do not
// answer (default 3).
func NewClaimer(ep *overlay.Endpoint, d *dht.DHT, now func() time.Time, extra int) *Claimer {
	if now == nil {
		now = time.Now
	}
	if extra <= 0 {
		extra = 3
	}
	return &Claimer{ep: ep, d: d, now: now, extra: extra, ask: DefaultAskTimeout}
}

// SetAskTimeout sets how long one node has to answer before the claimer
// goes on without it (default DefaultAskTimeout). Set it before the first
// claim.
func (c *Claimer) SetAskTimeout(d time.Duration) {
	if d > 0 {
		c.ask = d
	}
}

// SetPace makes the claimer call wait before each claim request to a node
// (a client pacing itself under the nodes' per-client limit on claims);
// an error of wait ends the attempt. Set it before the first claim.
func (c *Claimer) SetPace(wait func(ctx context.Context, node peer.ID) error) { c.pace = wait }

// SetSigner sets the client's account key, which signs its releases of
// permanent claims (the proof the nodes keep and sync with a release).
// Set it before the first claim.
func (c *Claimer) SetSigner(key ed25519.PrivateKey) { c.key = key }

// Claim is a won claim: the nodes that hold it (to send the result to).
type Claim struct {
	Job []byte
	// Place is the job's place key (job.PlaceKey): its nodes are the r
	// closest to it.
	Place   []byte
	Nodes   []peer.ID // the nodes that replied, nearest first
	Granted []peer.ID
	Start   int64
	// Accepts are the signed acceptances of the nodes that accepted the
	// confirm: the claim's certificate, handed to Nodes (ProtoCertify).
	Accepts [][]byte
	// acceptedBy are the nodes whose acceptance is in Accepts: they hold
	// the claim, and a result sent to them needs no certificate with it.
	acceptedBy map[string]bool
	// cert is the certificate's delivery (certify.go; nil: none under
	// way). Claim returns without waiting for it; Release waits for it,
	// so that no node hears of the claim's end before it could learn the
	// claim, and a result sent before it carries it instead.
	cert *certDelivery
}

// placeKey is the key the claim's job is placed by: Place, or the job's
// key for a claim made without one.
func (cl *Claim) placeKey() []byte { return job.LookupKey(cl.Job, cl.Place) }

// ErrLost reports a job another client holds.
var ErrLost = errors.New("job claimed by another client")

// ErrNoQuorum reports a claim attempt that ended with too few grants or
// accepted confirms for a quorum (claim.Failed): nodes were silent, or
// refused the confirm (a clock beyond T_skew, a view that differs), and
// not enough denied for the job to be another client's.
var ErrNoQuorum = errors.New("too few nodes granted it or accepted the confirm")

// ErrUnknown reports a job no node holds (any more).
var ErrUnknown = errors.New("job unknown to its nodes")

// Claim runs the ordered quorum claim protocol for a job (claim.Driver):
// ask its closest nodes one at a time, nearest first, each given the ask
// timeout (a silent node is marked dead and the next nearest asked); give
// up and release when more nodes denied than a quorum can spare; confirm
// with every reply at the granting nodes when a quorum granted, and win
// when a quorum accepted. The nodes come from a lookup of the job's key:
// Claim is for a job placed by its key (signed alone); ClaimAt takes the
// place of a job of a batch.
func (c *Claimer) Claim(ctx context.Context, jobKey []byte) (*Claim, error) {
	return c.ClaimAt(ctx, jobKey, nil, nil)
}

// ClaimAt is Claim of a job whose place key is place (job.PlaceKey; nil:
// the job's key), with a hint of the job's nodes (an index entry's
// replica set), which saves the lookup; when the hint proves stale (no
// node knows the job, or too few answer) it falls back to a lookup of
// the place. A job this claimer is claiming or holds (until Release, or
// SubmitResult stores its result) is refused with ErrHeld; one it is
// releasing is claimed once the release is done.
func (c *Claimer) ClaimAt(ctx context.Context, jobKey, place []byte, hint []peer.ID) (cl *Claim, err error) {
	place = job.LookupKey(jobKey, place)
	if !c.take(ctx, jobKey) {
		return nil, fmt.Errorf("claim %x: %w", jobKey, ErrHeld)
	}
	defer func() {
		if err != nil {
			c.drop(jobKey)
		}
		c.ticketDone(jobKey, err)
		c.count(err)
	}()
	cl, done, hintErr := c.claimHinted(ctx, jobKey, place, hint)
	if done {
		return cl, hintErr
	}
	r := c.d.Replication()
	c.lookups.Add(1)
	nodes, err := c.d.ClosestN(dht.WithPurpose(ctx, dht.PurposeClaim), place, r+c.extra)
	if err != nil {
		return nil, fmt.Errorf("claim %x: find its nodes: %w", jobKey, err)
	}
	cl, err = c.claim(ctx, jobKey, place, nodes)
	if err != nil && hintErr != nil {
		err = fmt.Errorf("%w; before that, at the entry's nodes: %v", err, hintErr)
	}
	if errors.Is(err, ErrNoQuorum) || errors.Is(err, ErrUnknown) {
		// Asked the wrong nodes, perhaps: the next attempt looks afresh
		// rather than asking the same set until the cache expires.
		c.d.Invalidate(place)
	}
	return cl, err
}

// ClaimHit is ClaimAt of an index entry's job: at the place the entry
// names (an index node that lies about it sends the claim where the job
// is not: it fails), the entry's replicas the hint.
func (c *Claimer) ClaimHit(ctx context.Context, h wire.IndexHit) (*Claim, error) {
	hint := make([]peer.ID, 0, len(h.Replicas))
	for _, r := range h.Replicas {
		hint = append(hint, peer.ID(r))
	}
	return c.ClaimAt(ctx, h.Job, job.PlaceKey(h.Job, h.Place), hint)
}

func (c *Claimer) claim(ctx context.Context, jobKey, place []byte, nodes []peer.ID) (*Claim, error) {
	c.attempts.Add(1)
	ticket, err := c.ticketFor(ctx, jobKey, place)
	if err != nil {
		return nil, fmt.Errorf("claim %x: %w", jobKey, err)
	}
	r := c.d.Replication()
	a := &attempt{drv: claim.NewDriver(ids(nodes), r), out: &Claim{Job: jobKey, Place: place}, r: r, quorum: claim.Quorum(min(r, len(nodes))), ticket: ticket}
	act := a.drv.Next()
	for {
		switch {
		case len(act.Confirm) > 0:
			var err error
			if act, err = c.confirmStep(ctx, a, act); err != nil {
				return nil, fmt.Errorf("claim %x: %w", jobKey, err)
			}
		case act.Ask != "":
			var err error
			if act, err = c.askStep(ctx, a, peer.ID(act.Ask)); err != nil {
				return nil, fmt.Errorf("claim %x: %w", jobKey, err)
			}
		default:
			return c.finish(ctx, a, act)
		}
	}
}

// attempt is one claim attempt: its driver, the claim it builds, and what
// the nodes said, for the confirm and for the error.
type attempt struct {
	drv        *claim.Driver
	out        *Claim
	r, quorum  int
	deniers    []peer.ID    // the nodes that denied
	lacking    int          // nodes that answered they do not hold the job
	answers    []nodeAnswer // each node asked and its answer, for a failed attempt's error
	after      int64        // the latest ended claim's start a grant named: ours must start after it
	unaccepted []string     // granting nodes that did not accept the confirm, and why
	ticket     []byte       // the quota ticket sent with each claim request (nil: none)
}

// askStep asks node n and feeds its answer to the driver; after a denial
// it waits (denyWait) before the next ask.
func (c *Claimer) askStep(ctx context.Context, a *attempt, n peer.ID) (claim.Action, error) {
	ans, err := c.ask1(ctx, a.out.Job, a.ticket, n)
	if err != nil {
		return claim.Action{}, err
	}
	act := a.answer(n, ans, c.now().UnixMilli())
	if st := ans.st; st != nil && st.Kind == claim.Denied && act.Ask != "" {
		select {
		case <-time.After(denyWait(ans.took, st.Busy, a.r-len(a.out.Nodes))):
		case <-ctx.Done():
			return claim.Action{}, ctx.Err()
		}
	}
	return act, nil
}

// answer feeds node n's answer (st nil: none) to the driver and keeps it
// for the claim and the error; now is the client's clock (ms).
func (a *attempt) answer(n peer.ID, ans askAnswer, now int64) claim.Action {
	st, reply := ans.st, ans.reply
	if st == nil {
		a.answers = append(a.answers, nodeAnswer{node: n, why: ans.why})
		return a.drv.Answer(string(n), false, 0, nil)
	}
	a.answers = append(a.answers, nodeAnswer{node: n, kind: st.Kind, answered: true})
	a.out.Nodes = append(a.out.Nodes, n)
	switch st.Kind {
	case claim.Granted:
		a.out.Granted = append(a.out.Granted, n)
		a.after = laterStart(a.after, st.Start, now)
	case claim.Denied:
		a.deniers = append(a.deniers, n)
	case claim.DontCare:
		a.lacking++
	}
	return a.drv.Answer(string(n), true, st.Kind, reply)
}

// nodeAnswer is a node's answer to an ask as a failed attempt's error
// tells it: the statement's kind, or silence for the reason why. It is
// kept as it came and put in words only when an attempt fails (a node's
// ID in base58 costs more than the rest of an answer's handling).
type nodeAnswer struct {
	node     peer.ID
	answered bool       // a statement came
	kind     claim.Kind // its kind
	why      string     // why none came
}

// answersText is answers as a failed attempt's error lists them.
func answersText(answers []nodeAnswer) string {
	parts := make([]string, len(answers))
	for i, x := range answers {
		if !x.answered {
			parts[i] = fmt.Sprintf("%s silent (%s)", shortID(string(x.node)), x.why)
		} else {
			parts[i] = shortID(string(x.node)) + " " + x.kind.String()
		}
	}
	return strings.Join(parts, ", ")
}

// shortIDs is the short IDs of nodes, comma-separated.
func shortIDs(nodes []peer.ID) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = shortID(string(n))
	}
	return strings.Join(parts, ", ")
}

// spareAnswer is a spare's answer to an ask sent beside a confirm.
type spareAnswer struct {
	askAnswer
	err error
}

// confirmStep sends the confirm, with every reply gathered, to the
// granting nodes — and, when the driver asks a spare beside it, that ask
// at the same time — and feeds the answers to the driver: the confirms'
// first, then the spare's, whose answer completes the step.
func (c *Claimer) confirmStep(ctx context.Context, a *attempt, act claim.Action) (claim.Action, error) {
	if a.out.Start == 0 { // a confirm to spares keeps the claim's start
		a.out.Start = c.nextStart(a.out.Job, a.after)
	}
	req := &wire.ConfirmRequest{Job: a.out.Job, Start: a.out.Start}
	for _, g := range a.drv.Replies() {
		req.Replies = append(req.Replies, g.Bytes)
	}
	var spare chan spareAnswer
	if act.Ask != "" {
		spare = make(chan spareAnswer, 1)
		go func(n peer.ID) {
			ans, err := c.ask1(ctx, a.out.Job, a.ticket, n)
			spare <- spareAnswer{ans, err}
		}(peer.ID(act.Ask))
	}
	next := claim.Action{}
	accepts, errs := c.confirm(ctx, act.Confirm, req)
	for _, n := range act.Confirm { // in the driver's order: the claim's acceptances are deterministic
		next = a.confirmedBy(n, accepts[n], errs[n])
	}
	if spare == nil {
		return next, nil
	}
	ans := <-spare
	if ans.err != nil && ctx.Err() != nil {
		return claim.Action{}, ans.err
	}
	// A spare that refused this client for its rate counts as silent: the
	// confirms may already have made the claim permanent, and ending the
	// attempt here would leave it on the nodes unreleased.
	return a.answer(peer.ID(act.Ask), ans.askAnswer, c.now().UnixMilli()), nil
}

// confirmedBy feeds node n's answer to the confirm to the driver:
// accept, its signed acceptance (nil: it refused or was silent, for the
// reason err), and returns the driver's next action.
func (a *attempt) confirmedBy(n string, accept []byte, err error) claim.Action {
	if accept != nil {
		a.out.Accepts = append(a.out.Accepts, accept)
		if a.out.acceptedBy == nil {
			a.out.acceptedBy = map[string]bool{}
		}
		a.out.acceptedBy[n] = true
	} else {
		a.unaccepted = append(a.unaccepted, fmt.Sprintf("%s: %v", shortID(n), err))
	}
	return a.drv.Confirmed(n, accept != nil)
}

// finish ends an attempt as the driver decided: releases what it must,
// sends a won claim's certificate to its nodes, and says why it failed.
func (c *Claimer) finish(ctx context.Context, a *attempt, act claim.Action) (*Claim, error) {
	jobKey := a.out.Job
	if len(act.Release) > 0 {
		c.releaseFailed(ctx, a, act)
	}
	switch act.Done {
	case claim.Won:
		// The certificate goes out without holding the claim up, after
		// the certify delay unless the result carries it first
		// (certify.go).
		c.startCertify(ctx, a.out)
		return a.out, nil
	case claim.Lost:
		return nil, fmt.Errorf("claim %x: %w (denied by %s)", jobKey, ErrLost, shortIDs(a.deniers))
	case claim.Unknown:
		return nil, fmt.Errorf("claim %x: %w", jobKey, ErrUnknown)
	case claim.Failed:
		why := ""
		if len(a.unaccepted) > 0 {
			slices.Sort(a.unaccepted)
			why = " (not accepted by " + strings.Join(a.unaccepted, "; ") + ")"
		}
		return nil, fmt.Errorf("claim %x: %w for a quorum of %d (asked: %s)%s", jobKey, ErrNoQuorum, a.quorum, answersText(a.answers), why)
	}
	return nil, fmt.Errorf("claim %x: driver stalled", jobKey)
}

// nextStart is the start of a new claim of the job: now, but after
// `after` (the latest ended claim's start the grants named, which may be
// ahead of this clock when that claim's client's clock was) and always
// after every start this claimer used for the job before. A claim is known by
// (client, start), and a released claim's tombstone beats a claim of the
// same start: an attempt that reused the start of one it just released
// (the fallback after a failed hinted attempt, within the same
// millisecond) could have its new claim ended by the old release reaching
// a replica later, and the job handed to a second client while the first
// runs it.
func (c *Claimer) nextStart(jobKey []byte, after int64) int64 {
	start := max(c.now().UnixMilli(), after+1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.starts == nil {
		c.starts = recent.NewMap[string, int64](startsRemembered)
	}
	if last, ok := c.starts.Get(string(jobKey)); ok && start <= last {
		start = last + 1
	}
	c.starts.Put(string(jobKey), start)
	return start
}

// startsRemembered bounds the claim starts a Claimer remembers
// (nextStart): a start is kept through at least 8,192 later claims of
// other jobs, and it matters only while an old release of it could still
// reach a replica — within T_claim (15 s) of it, when a client would have
// to start 546 claims a second to push it out.
const startsRemembered = 1 << 14

// confirm sends the confirm to every node in parallel, each given the ask
// timeout, and returns each node's signed acceptance: nil when it refused,
// did not answer, or answered with anything but its acceptance of this
// claim.
func (c *Claimer) confirm(ctx context.Context, nodes []string, req *wire.ConfirmRequest) (map[string][]byte, map[string]error) {
	resps := make(map[string]*wire.ConfirmResponse, len(nodes))
	for _, n := range nodes {
		resps[n] = &wire.ConfirmResponse{}
	}
	errs := c.fanOutResp(ctx, nodes, wire.ProtoConfirm, req, wire.MaxReplyBytes+64, func(n string) wire.Validator { return resps[n] })
	out := make(map[string][]byte, len(nodes))
	for _, n := range nodes {
		out[n] = nil
		if errs[n] != nil {
			continue
		}
		if b := resps[n].Accept; isAcceptance(b, n, req.Job, req.Start) {
			out[n] = b
		} else {
			errs[n] = errNoAcceptance
		}
	}
	return out, errs
}

// errNoAcceptance is a confirm answered with anything but the node's
// acceptance of the claim.
var errNoAcceptance = errors.New("answered with no acceptance of this claim")

// isAcceptance reports whether b is node n's signed acceptance of the
// claim of job starting at start (its signature is checked by whoever
// the certificate goes to).
func isAcceptance(b []byte, n string, job []byte, start int64) bool {
	_, st, err := claim.Decode(b)
	return err == nil && st.Kind == claim.Accepted && peer.ID(st.Node) == peer.ID(n) && string(st.Job) == string(job) && st.Start == start
}
