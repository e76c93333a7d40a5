package claimclient

import (
	"context"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
)

// claimHinted tries the hinted replica set when it is whole, and then —
// or at once when it is not — the set its nodes name as the job's nearest
// now: a node near the job knows its neighbourhood, so one near question
// refreshes a stale set where a lookup costs tens of requests (and a
// failed attempt has asked the nearest holder to repair the replica set
// meanwhile). done reports that the claim is decided (won, or lost to
// another client); otherwise the caller looks the job up.
func (c *Claimer) claimHinted(ctx context.Context, jobKey []byte, hint []peer.ID) (cl *Claim, done bool, err error) {
	r := c.d.Replication()
	if len(hint) == 0 {
		return nil, false, nil
	}
	if len(hint) >= r {
		cl, err := c.claim(ctx, jobKey, orderFor(jobKey, hint))
		if err == nil || errors.Is(err, ErrLost) {
			return cl, true, err
		}
		// The hint proved stale: so may a cached lookup made when the
		// same nodes were down (a node that came back is not in it).
		c.d.Invalidate(jobKey)
	}
	nodes, nerr := c.d.NearVia(dht.WithPurpose(ctx, dht.PurposeClaim), jobKey, hint, r+c.extra+2)
	if nerr != nil || len(nodes) < r {
		return nil, false, nil
	}
	c.refreshes.Add(1)
	cl, err = c.claim(ctx, jobKey, nodes)
	return cl, err == nil || errors.Is(err, ErrLost), err
}

// orderFor sorts a hinted replica set by distance to the job.
func orderFor(jobKey []byte, nodes []peer.ID) []peer.ID {
	out := append([]peer.ID(nil), nodes...)
	dht.SortPeers(keyspace.KeyPos(jobKey), out)
	return out
}
