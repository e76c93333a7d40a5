package claimclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// ClaimMany claims several jobs of one place at once (at most
// wire.MaxClaimMany): each job runs its own ordered quorum attempt
// (claim.Driver) over the place's nodes, as Claim would, but the attempts
// go in lockstep, so that each node is sent one request for all the jobs
// asking it (wire.ProtoClaimMany) and one confirm for all the jobs
// confirming there (ProtoConfirmMany), and answers them under one
// signature. place is their place key (job.PlaceKey; nil only for one
// job placed by its key); hint is the place's replica set from an index
// entry (nil: look the place up). A job whose attempt failed for want of answers
// (ErrNoQuorum, ErrUnknown) is tried again alone, as ClaimAt would after
// a stale hint. Claims and errors are per job, in the order of jobs.
func (c *Claimer) ClaimMany(ctx context.Context, jobs [][]byte, place []byte, hint []peer.ID) ([]*Claim, []error) {
	claims, errs := make([]*Claim, len(jobs)), make([]error, len(jobs))
	if len(jobs) > wire.MaxClaimMany || (len(place) == 0 && len(jobs) > 1) {
		for i := range errs {
			errs[i] = fmt.Errorf("claim of %d jobs at once at place %x: at most %d, of one place named", len(jobs), place, wire.MaxClaimMany)
		}
		return claims, errs
	}
	place = job.LookupKey(jobs[0], place)
	var live []int
	for i, k := range jobs {
		if !c.take(ctx, k) {
			errs[i] = fmt.Errorf("claim %x: %w", k, ErrHeld)
			continue
		}
		live = append(live, i)
	}
	defer func() {
		for _, i := range live {
			if errs[i] != nil {
				c.drop(jobs[i])
			}
			c.ticketDone(jobs[i], errs[i])
			c.count(errs[i])
		}
	}()
	nodes, err := c.manyNodes(ctx, place, hint)
	if err != nil {
		for _, i := range live {
			errs[i] = fmt.Errorf("claim %x: find its nodes: %w", jobs[i], err)
		}
		return claims, errs
	}
	r := c.d.Replication()
	liveJobs := make([][]byte, len(live))
	for j, i := range live {
		liveJobs[j] = jobs[i]
	}
	tickets, terrs := c.ticketsFor(ctx, liveJobs, place)
	var atts []*attempt
	var of []int // the job index of each attempt
	for j, i := range live {
		c.attempts.Add(1)
		if terrs[j] != nil {
			errs[i] = fmt.Errorf("claim %x: %w", jobs[i], terrs[j])
			continue
		}
		atts = append(atts, &attempt{drv: claim.NewDriver(ids(nodes), r), out: &Claim{Job: jobs[i], Place: place}, r: r,
			quorum: claim.Quorum(min(r, len(nodes))), ticket: tickets[j]})
		of = append(of, i)
	}
	acts, aborted := c.runLockstep(ctx, atts)
	for j, a := range atts {
		i := of[j]
		if aborted[j] != nil {
			errs[i] = fmt.Errorf("claim %x: %w", jobs[i], aborted[j])
			continue
		}
		claims[i], errs[i] = c.finish(ctx, a, acts[j])
		if errors.Is(errs[i], ErrNoQuorum) || errors.Is(errs[i], ErrUnknown) {
			c.d.Invalidate(place)
			if cl, err := c.claimAlone(ctx, jobs[i], place); err == nil || errors.Is(err, ErrLost) {
				claims[i], errs[i] = cl, err
			} else {
				errs[i] = fmt.Errorf("%w; before that, with the other jobs of its place: %v", err, errs[i])
			}
		}
	}
	return claims, errs
}

// manyNodes is the place's nodes, nearest first: the hint when it holds
// r of them, else a lookup.
func (c *Claimer) manyNodes(ctx context.Context, place []byte, hint []peer.ID) ([]peer.ID, error) {
	r := c.d.Replication()
	if len(hint) >= r {
		return orderFor(place, hint), nil
	}
	c.lookups.Add(1)
	return c.d.ClosestN(dht.WithPurpose(ctx, dht.PurposeClaim), place, r+c.extra)
}

// claimAlone is one job's claim after a lookup of its place (ClaimAt
// without a hint), for a job the lockstep attempt did not win.
func (c *Claimer) claimAlone(ctx context.Context, jobKey, place []byte) (*Claim, error) {
	c.lookups.Add(1)
	nodes, err := c.d.ClosestN(dht.WithPurpose(ctx, dht.PurposeClaim), place, c.d.Replication()+c.extra)
	if err != nil {
		return nil, fmt.Errorf("claim %x: find its nodes: %w", jobKey, err)
	}
	return c.claim(ctx, jobKey, place, nodes)
}

// runLockstep steps every attempt until each is done: in each round, the
// asks of all attempts go to their nodes as one request per node, the
// confirms as one per node, all rounds' requests in parallel; the
// answers are fed to each attempt's driver as confirmStep and askStep
// feed them. It returns each attempt's final action, and the error that
// ended an attempt early (the node refused this client for its rate or
// quota, or ctx ended), nil for those the driver ended.
func (c *Claimer) runLockstep(ctx context.Context, atts []*attempt) ([]claim.Action, []error) {
	acts := make([]claim.Action, len(atts))
	aborted := make([]error, len(atts))
	for j, a := range atts {
		acts[j] = a.drv.Next()
	}
	for {
		asks, confirms := map[string][]int{}, map[string][]int{}
		for j, act := range acts {
			if aborted[j] != nil || act.Done != claim.Pending {
				continue
			}
			if act.Ask != "" {
				asks[act.Ask] = append(asks[act.Ask], j)
			}
			for _, n := range act.Confirm {
				if atts[j].out.Start == 0 {
					atts[j].out.Start = c.nextStart(atts[j].out.Job, atts[j].after)
				}
				confirms[n] = append(confirms[n], j)
			}
		}
		if len(asks) == 0 && len(confirms) == 0 {
			return acts, aborted
		}
		if err := ctx.Err(); err != nil {
			for j := range aborted {
				if aborted[j] == nil && acts[j].Done == claim.Pending {
					aborted[j] = err
				}
			}
			return acts, aborted
		}
		answers, accepts := c.manyRound(ctx, atts, asks, confirms)
		wait := time.Duration(0)
		for j, act := range acts {
			if aborted[j] != nil || act.Done != claim.Pending || (act.Ask == "" && len(act.Confirm) == 0) {
				continue
			}
			next := act
			for _, n := range act.Confirm { // in the driver's order, as confirmStep
				acc := accepts[n][j]
				next = atts[j].confirmedBy(n, acc.b, acc.err)
			}
			if act.Ask != "" {
				ans := answers[act.Ask][j]
				if ans.err != nil {
					aborted[j] = ans.err
					continue
				}
				next = atts[j].answer(peer.ID(act.Ask), ans.askAnswer, c.now().UnixMilli())
				if st := ans.st; st != nil && st.Kind == claim.Denied && next.Ask != "" {
					wait = max(wait, denyWait(ans.took, st.Busy, atts[j].r-len(atts[j].out.Nodes)))
				}
			}
			if next.Ask == "" && len(next.Confirm) == 0 && next.Done == claim.Pending {
				next = atts[j].drv.Next()
			}
			acts[j] = next
		}
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
	}
}

// manyAccept is one node's answer to one job's confirm in a round.
type manyAccept struct {
	b   []byte // its acceptance (nil: none)
	err error  // why none
}

// manyRound sends a round's requests, all at once: one claim request per
// node of asks (node → attempts asking it) and one confirm per node of
// confirms, and returns each node's answer for each attempt.
func (c *Claimer) manyRound(ctx context.Context, atts []*attempt, asks, confirms map[string][]int) (map[string]map[int]spareAnswer, map[string]map[int]manyAccept) {
	answers := make(map[string]map[int]spareAnswer, len(asks))
	accepts := make(map[string]map[int]manyAccept, len(confirms))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for n, js := range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := c.askMany(ctx, atts, peer.ID(n), js)
			mu.Lock()
			answers[n] = got
			mu.Unlock()
		}()
	}
	for n, js := range confirms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := c.confirmMany(ctx, atts, n, js)
			mu.Lock()
			accepts[n] = got
			mu.Unlock()
		}()
	}
	wg.Wait()
	return answers, accepts
}

// askMany asks node n for the jobs of attempts js in one request, each
// ticket with its job, giving it the ask timeout, and returns its answer
// for each, as ask1 would for the job alone.
func (c *Claimer) askMany(ctx context.Context, atts []*attempt, n peer.ID, js []int) map[int]spareAnswer {
	out := make(map[int]spareAnswer, len(js))
	fail := func(ans askAnswer, err error) map[int]spareAnswer {
		for _, j := range js {
			out[j] = spareAnswer{ans, err}
		}
		return out
	}
	req := &wire.ClaimManyRequest{Jobs: make([][]byte, len(js))}
	tickets := false
	for k, j := range js {
		req.Jobs[k] = atts[j].out.Job
		tickets = tickets || atts[j].ticket != nil
	}
	if tickets {
		req.Tickets = make([][]byte, len(js))
		for k, j := range js {
			req.Tickets[k] = atts[j].ticket
		}
	}
	if c.pace != nil {
		for range js { // the node charges one token per job
			if err := c.pace(ctx, n); err != nil {
				return fail(askAnswer{}, err)
			}
		}
	}
	var resp wire.ClaimManyResponse
	t0 := time.Now()
	actx, cancel := context.WithTimeout(ctx, c.ask)
	err := c.callClaimMany(actx, n, req, &resp)
	cancel()
	took := time.Since(t0)
	if err != nil {
		ans, aerr := c.askFailed(ctx, n, err, took)
		return fail(ans, aerr)
	}
	if len(resp.Replies) != len(js) {
		return fail(askAnswer{took: took, why: fmt.Sprintf("%d replies for %d jobs", len(resp.Replies), len(js))}, nil)
	}
	for k, j := range js {
		out[j] = spareAnswer{replyAnswer(resp.Replies[k], atts[j].out.Job, n, took), nil}
	}
	return out
}

// confirmMany sends node n the confirms of attempts js in one request,
// each with every reply its driver gathered, and returns its answer for
// each: the acceptance, or why none.
func (c *Claimer) confirmMany(ctx context.Context, atts []*attempt, n string, js []int) map[int]manyAccept {
	out := make(map[int]manyAccept, len(js))
	req := &wire.ConfirmManyRequest{Items: make([]wire.ConfirmRequest, len(js))}
	for k, j := range js {
		it := wire.ConfirmRequest{Job: atts[j].out.Job, Start: atts[j].out.Start}
		for _, g := range atts[j].drv.Replies() {
			it.Replies = append(it.Replies, g.Bytes)
		}
		req.Items[k] = it
	}
	var resp wire.ConfirmManyResponse
	actx, cancel := context.WithTimeout(ctx, c.ask)
	err := c.callConfirmMany(actx, peer.ID(n), req, &resp)
	cancel()
	if err == nil && len(resp.Accepts) != len(js) {
		err = fmt.Errorf("%d answers for %d confirms", len(resp.Accepts), len(js))
	}
	for k, j := range js {
		switch {
		case err != nil:
			out[j] = manyAccept{err: err}
		case resp.Accepts[k] == nil:
			out[j] = manyAccept{err: errors.New(resp.Refused[k])}
		case isAcceptance(resp.Accepts[k], n, req.Items[k].Job, req.Items[k].Start):
			out[j] = manyAccept{b: resp.Accepts[k]}
		default:
			out[j] = manyAccept{err: errNoAcceptance}
		}
	}
	return out
}
