package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// Several jobs per claim (Config.ClaimMany): a cycle that vetted an entry
// claims it together with the other entries served of the same place
// (the jobs of one submission batch share their nodes), in one request
// and one confirm per node (claimclient.ClaimMany). It runs the first job
// won; the others wait in the client's claimed list for the next cycles
// of their project (RunOne takes them first), and are released, not
// left to lapse, if the client stops first.

// claimedAhead is a job won beside another of its place, not run yet.
type claimedAhead struct {
	project string
	w       won
	at      time.Time // when it was won (the client's clock)
}

// tryPlace claims the vetted entry first (v its vetting) with up to
// bound − 1 entries (groupBound, within claimRoom) of rest whose jobs are of the same place, each
// vetted first; entries of other places, and those past the bound, are
// kept for the next cycles. It returns the first job won to run, keeps
// the others won in the claimed list, and counts the entries skipped.
// With none won, err is what should end the cycle (the client stopping,
// refused for its rate, at its quota), else nil.
func (c *Client) tryPlace(ctx context.Context, project string, first pendingHit, v *vetted, rest []pendingHit, bound int) (w *won, skips int, err error) {
	place := placeOf(first.hit, v)
	bound = c.claimRoom(bound)
	group := []pendingHit{first}
	vets := []*vetted{v}
	pre := c.prefetchSpecs(ctx, place, rest, bound-1)
	for i, ph := range rest {
		if len(group) >= bound || !bytes.Equal(job.PlaceKey(ph.hit.Job, ph.hit.Place), place) {
			c.addPending(ph)
			continue
		}
		pv, err := c.vetFrom(ctx, project, ph.hit, pre)
		if isSkip(err) {
			unit := ""
			if pv != nil {
				unit = pv.unit
			}
			c.skip(project, ph.hit.Job, unit, ph.from, skipReason(err))
			c.noteSkip(project, ph.hit.Job, err)
			skips++
			continue
		}
		if err != nil {
			// Not vetted now (the cycle's error comes from its first
			// entry): this entry and the rest are kept for later cycles.
			for _, keep := range rest[i:] {
				c.addPending(keep)
			}
			break
		}
		if !bytes.Equal(placeOf(ph.hit, pv), place) {
			// Its spec places it elsewhere than its entry said: not in
			// this claim.
			c.forgetVetted(pv)
			c.addPending(ph)
			continue
		}
		group, vets = append(group, ph), append(vets, pv)
	}
	wons, errs := c.claimGroup(ctx, project, group, place, vets)
	c.startGroup(slices.DeleteFunc(slices.Clone(wons), func(cl *claimclient.Claim) bool { return cl == nil }))
	for i, cl := range wons {
		if cl == nil {
			continue
		}
		if w == nil {
			w = &won{cl: cl, v: vets[i]}
			continue
		}
		c.mu.Lock()
		c.claimed = append(c.claimed, claimedAhead{project: project, w: won{cl: cl, v: vets[i]}, at: c.cfg.Now()})
		c.mu.Unlock()
	}
	if w != nil {
		return w, skips, nil
	}
	for _, err := range errs {
		if errors.Is(err, errRateLimited) || errors.Is(err, errStopping) || errors.Is(err, claimclient.ErrOverQuota) {
			return nil, skips, err
		}
	}
	return nil, skips, nil
}

// prefetchSpecs gets, in one request to the first replica of the first
// of them, the specs of up to n entries of rest placed at place (a
// batch's jobs share their replicas), for vetFrom: each with its spec,
// or why that node gave none; nil when there is none or the node does
// not answer (each is then asked alone).
func (c *Client) prefetchSpecs(ctx context.Context, place []byte, rest []pendingHit, n int) map[string]gotSpec {
	var keys [][]byte
	var node peer.ID
	for _, ph := range rest {
		if len(keys) == min(n, wire.MaxJobsPerStore) {
			break
		}
		if len(ph.hit.Replicas) == 0 || !bytes.Equal(job.PlaceKey(ph.hit.Job, ph.hit.Place), place) {
			continue
		}
		if r := peer.ID(ph.hit.Replicas[0]); node == "" {
			node = r
		} else if r != node {
			continue // an entry naming other replicas: vetted alone
		}
		keys = append(keys, ph.hit.Job)
	}
	if len(keys) < 2 {
		return nil
	}
	got, err := getSpecs(ctx, c.cfg.Agent, c.cfg.Now(), node, keys, c.sigs)
	if err != nil {
		return nil
	}
	for _, k := range keys {
		if _, ok := got[string(k)]; !ok {
			got[string(k)] = gotSpec{err: fmt.Errorf("node %s does not hold the job", node)}
		}
	}
	return got
}

// claimRoom is n, or less when the client's quota (as its claimer last
// learned it, claimclient.TicketRoom) has room for fewer jobs: entries
// found or claimed beyond it would be refused their tickets, their
// vetting wasted and their index entries held back from other clients.
// One job claims are left as they were (n, unbounded).
func (c *Client) claimRoom(n int) int {
	if c.cfg.ClaimMany == 1 {
		return n
	}
	if room := c.claimer.TicketRoom(); room > 0 {
		return min(n, room)
	}
	return n
}

// claimGroup claims the entries of group, all of place, at once, and
// returns the claim won (nil: none) or the error of each. A job not won
// is no longer marked run here; an entry refused for the client's rate,
// its stopping or its quota is kept for the next cycles.
func (c *Client) claimGroup(ctx context.Context, project string, group []pendingHit, place []byte, vets []*vetted) ([]*claimclient.Claim, []error) {
	wons, errs := make([]*claimclient.Claim, len(group)), make([]error, len(group))
	if err := c.beginClaim(project); err != nil {
		for i, ph := range group {
			errs[i] = err
			c.addPending(ph)
			c.forgetVetted(vets[i])
		}
		return wons, errs
	}
	defer c.endClaim(project)
	jobs := make([][]byte, len(group))
	for i, ph := range group {
		jobs[i] = ph.hit.Job
	}
	start, t0 := time.Now(), c.cfg.Now()
	claims, cerrs := c.claimer.ClaimMany(ctx, jobs, place, hintOf(group[0].hit))
	for i, ph := range group {
		c.noteClaim(project, ph.hit.Job, cerrs[i])
		if cerrs[i] == nil {
			c.claimWon(start, t0)
			wons[i] = claims[i]
			continue
		}
		c.forgetVetted(vets[i])
		errs[i] = c.claimFailed(ctx, project, ph, cerrs[i])
		if errors.Is(errs[i], errRateLimited) || errors.Is(errs[i], claimclient.ErrOverQuota) {
			c.addPending(ph)
		}
	}
	return wons, errs
}

// forgetVetted forgets the unit of a vetted job not run here (nil: none).
func (c *Client) forgetVetted(v *vetted) {
	if v != nil {
		c.forgetUnit(v.unit)
	}
}

// takeClaimed takes the job of project that has waited longest in the
// claimed list (nil: none).
func (c *Client) takeClaimed(project string) *won {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ca := range c.claimed {
		if ca.project == project {
			c.claimed = append(c.claimed[:i], c.claimed[i+1:]...)
			return &ca.w
		}
	}
	return nil
}

// releaseClaimed releases every job still in the claimed list (the
// client stops, or reached MaxJobs): not run here, so another client may
// claim it at once instead of after its T_finish.
func (c *Client) releaseClaimed(ctx context.Context) {
	c.mu.Lock()
	left := c.claimed
	c.claimed = nil
	c.mu.Unlock()
	c.releaseKept(ctx, left, "claimed beside another, not run before the client stopped")
}

// releaseKeptLocked takes the kept jobs of project ("": every project)
// out of the claimed list and releases them in the background: the
// client was paused, or detached from the project, and will not run them
// soon while their T_finish runs. c.mu is held.
func (c *Client) releaseKeptLocked(project, why string) {
	var left, keep []claimedAhead
	for _, ca := range c.claimed {
		if project == "" || ca.project == project {
			left = append(left, ca)
		} else {
			keep = append(keep, ca)
		}
	}
	if len(left) == 0 {
		return
	}
	c.claimed = keep
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		c.releaseKept(context.Background(), left, why)
	}()
}

// releaseKept releases kept jobs, saying why in the log.
func (c *Client) releaseKept(ctx context.Context, kept []claimedAhead, why string) {
	for _, ca := range kept {
		c.leaveGroup(ctx, ca.w.cl.Job)
		c.forgetVetted(ca.w.v)
		c.claimer.Release(context.WithoutCancel(ctx), ca.w.cl, wire.SkipStopping)
		c.log.Info("job released", "job", jobName(ca.w.cl.Job), "project", ca.project, "err", why)
	}
}
