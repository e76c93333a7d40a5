package claimclient

import (
	"context"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/wire"
)

// Release gives a won claim back at its nodes; when none of them answers
// (they moved or died), at the job's current closest nodes. The nearest
// node is released last, after the others answered: it writes the job's
// index entries and, seeing the job ready again, ends their quarantine at
// once; released first, it would offer the job to clients that then lose
// it at a replica still holding this claim, and the entry would stay
// quarantined for T_quarantine. why is the reason the replicas record
// (attributed to this client) for the project to read.
func (c *Claimer) Release(ctx context.Context, cl *Claim, why wire.SkipReason) {
	c.releaseStarted(cl.Job)
	defer c.drop(cl.Job)
	if err := cl.Certified(ctx); err != nil {
		return
	}
	req := c.releaseReq(cl.Job, cl.Start)
	req.Reason = why
	nodes := ids(cl.Nodes)
	var errs []error
	for _, part := range [][]string{nodes[min(1, len(nodes)):], nodes[:min(1, len(nodes))]} {
		for _, err := range c.fanOut(ctx, part, wire.ProtoRelease, req) {
			errs = append(errs, err)
		}
	}
	if slices.Contains(errs, nil) {
		return
	}
	if nodes := c.current(dht.WithPurpose(ctx, dht.PurposeRelease), cl, false); len(nodes) > 0 {
		c.fanOut(ctx, ids(nodes), wire.ProtoRelease, req)
	}
}

// claimNodes are the nodes a won claim's certificate goes to: all that
// answered its claim requests.
func claimNodes(cl *Claim) []string { return ids(cl.Nodes) }

// current finds the job's closest nodes afresh (the claim's nodes are
// gone: the replicas moved on), without the claim's own: by a near
// question to the claim's nodes (dht.NearVia, one request) unless lookup
// is set or none of them answers, else by a lookup.
func (c *Claimer) current(ctx context.Context, cl *Claim, lookup bool) []peer.ID {
	r := c.d.Replication()
	var nodes []peer.ID
	if !lookup {
		nodes, _ = c.d.NearVia(ctx, cl.placeKey(), cl.Nodes, r)
	}
	if len(nodes) < r {
		c.d.Invalidate(cl.placeKey())
		var err error
		if nodes, err = c.d.ClosestN(ctx, cl.placeKey(), r); err != nil {
			return nil
		}
	}
	return slices.DeleteFunc(nodes, func(p peer.ID) bool { return slices.Contains(cl.Nodes, p) })
}

// releaseReq is the release of a job whose claim started at start (0:
// only a temporary claim): signed when the claimer has the client's key.
func (c *Claimer) releaseReq(jobKey []byte, start int64) *wire.ReleaseRequest {
	req := &wire.ReleaseRequest{Job: jobKey}
	if c.key != nil && start > 0 {
		req.Start, req.Sig = start, claim.SignRelease(jobKey, start, c.key)
	}
	return req
}

// releaseFailed releases the grants of an attempt that ended without a
// claim. When it failed for want of grants while nodes among the job's
// closest answered that they do not hold it — a holder left and the job
// was not yet handed to the next closest — the nearest granting node is
// asked to repair the job's replica set at once (ReleaseRequest.Repair),
// so the next attempt finds a quorum of holders instead of waiting for a
// republish round.
func (c *Claimer) releaseFailed(ctx context.Context, a *attempt, act claim.Action) {
	req := c.releaseReq(a.out.Job, a.out.Start)
	nodes := act.Release
	if act.Done == claim.Failed && a.lacking > 0 {
		repair := *req
		repair.Repair = true
		done, nearest := make(chan struct{}), nodes[:1]
		go func() {
			defer close(done)
			c.fanOut(ctx, nearest, wire.ProtoRelease, &repair)
		}()
		defer func() { <-done }()
		nodes = nodes[1:]
	}
	if len(nodes) > 0 {
		c.fanOut(ctx, nodes, wire.ProtoRelease, req)
	}
}
