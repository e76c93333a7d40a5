package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/wire"
)

// claimHit claims an entry's job, placed at place (the claimer paces its
// requests), keeping the entry for another try when its claim failed for
// want of answers.
func (c *Client) claimHit(ctx context.Context, project string, ph pendingHit, place []byte) (*claimclient.Claim, error) {
	h := ph.hit
	if err := c.beginClaim(project); err != nil {
		return nil, err
	}
	defer c.endClaim(project)
	start, t0 := time.Now(), c.cfg.Now()
	cl, err := c.claimer.ClaimAt(ctx, h.Job, place, hintOf(h))
	if err == nil {
		c.claimWon(start, t0)
		return cl, nil
	}
	return nil, c.claimFailed(ctx, project, ph, err)
}

// hintOf is an entry's replica set, the hint of its claim.
func hintOf(h wire.IndexHit) []peer.ID {
	hint := make([]peer.ID, 0, len(h.Replicas))
	for _, r := range h.Replicas {
		hint = append(hint, peer.ID(r))
	}
	return hint
}

// claimWon times a won claim that began at start (this machine's clock)
// and t0 (the client's).
func (c *Client) claimWon(start, t0 time.Time) {
	c.timeClaim(c.cfg.Now().Sub(t0))
	if c.cfg.OnClaim != nil {
		c.cfg.OnClaim(time.Since(start))
	}
}

// claimFailed handles the failed claim of entry ph: notes the client over
// its quota, keeps the entry for another try when the claim failed for
// want of answers, logs it, and returns the error (marked errRateLimited
// when a node refused this client for its rate).
func (c *Client) claimFailed(ctx context.Context, project string, ph pendingHit, err error) error {
	msg := "claim failed"
	var we *wire.Error
	switch {
	case errors.Is(err, claimclient.ErrLost):
		msg = "claim lost" // another client has it
	case errors.Is(err, claimclient.ErrOverQuota):
		msg = "over quota: no claim until a job held ends"
		c.mu.Lock()
		c.overQuota = true
		c.mu.Unlock()
		c.breakRevealStall()
	case errors.As(err, &we) && we.Status == wire.StatusRateLimited:
		err = fmt.Errorf("%w: %w", errRateLimited, err)
	case errors.Is(err, claimclient.ErrHeld), errors.Is(err, claimclient.ErrUnknown), ctx.Err() != nil:
	default:
		if ph.tries+1 < pendingTries {
			ph.tries++
			ph.notBefore = c.cfg.Now().Add(pendingRetry << (ph.tries - 1))
			c.addPending(ph)
			msg = "claim failed, will retry"
		}
	}
	c.log.Info(msg, "job", jobName(ph.hit.Job), "project", project, "err", err)
	return err
}
