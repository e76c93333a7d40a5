package claimclient

import (
	"context"
	"errors"
	"fmt"

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
func (c *Claimer) claimHinted(ctx context.Context, jobKey, place []byte, hint []peer.ID) (cl *Claim, done bool, err error) {
	r := c.d.Replication()
	if len(hint) == 0 {
		return nil, false, nil
	}
	var hintErr error
	if len(hint) >= r {
		cl, err := c.claim(ctx, jobKey, place, orderFor(place, hint))
		if err == nil || errors.Is(err, ErrLost) {
			return cl, true, err
		}
		hintErr = err
		// The hint proved stale: so may a cached lookup made when the
		// same nodes were down (a node that came back is not in it).
		c.d.Invalidate(place)
	}
	nodes, nerr := c.d.NearVia(dht.WithPurpose(ctx, dht.PurposeClaim), place, hint, r+c.extra+2)
	if nerr != nil || len(nodes) < r {
		return nil, false, hintErr
	}
	c.refreshes.Add(1)
	cl, err = c.claim(ctx, jobKey, place, nodes)
	if err != nil && hintErr != nil {
		err = fmt.Errorf("%w; before that, at the entry's nodes: %v", err, hintErr)
	}
	return cl, err == nil || errors.Is(err, ErrLost), err
}

// orderFor sorts a hinted replica set by distance to the job's place.
func orderFor(place []byte, nodes []peer.ID) []peer.ID {
	out := append([]peer.ID(nil), nodes...)
	dht.SortPeers(keyspace.KeyPos(place), out)
	return out
}
