package client

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
)

// DeadlineEvery lets the tests check a running job's deadline often.
var DeadlineEvery = &deadlineEvery

// MaxRevealing lets the tests keep every job in its slot while it waits
// to reveal (0), as before slots were freed.
var MaxRevealing = &maxRevealing

// BreakStalls lets the tests turn off the early reveal at the quota.
var BreakStalls = &breakStalls

// SpecErrs fetches the specs of keys from node n in one request, as a
// group's prefetch does, and returns each one's check (nil when it
// holds) by job key; a spec sent for a key not asked is not there.
func SpecErrs(ctx context.Context, a *agent.Agent, now time.Time, n peer.ID, keys [][]byte) (map[string]error, error) {
	got, err := getSpecs(ctx, a, now, n, keys, nil)
	if err != nil {
		return nil, err
	}
	errs := make(map[string]error, len(got))
	for k, g := range got {
		errs[k] = g.err
	}
	return errs, nil
}

// AutoGroup is the claim group size chosen per claim (ClaimMany 0).
var AutoGroup = autoGroup
