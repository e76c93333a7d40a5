package dht

import (
	"context"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/wire"
)

// maxWalkHops bounds the near questions of one Walk.
const maxWalkHops = 16

// WalkStats counts what Walks did: how many ran and the near questions
// they sent.
type WalkStats struct {
	Walks, RPCs int64
}

// Walk finds the n nodes nearest pos by greedy routing: it asks the
// nearest node it knows for that node's n nearest to pos (/up/near), then
// the nearest node of the answer, and so on, one question at a time, until
// the nearest node known has answered itself (or is this party). Each hop
// gains about log2(BucketSize) bits, so a walk costs about
// log2(N)/log2(BucketSize) + 1 questions (3 at 1,024 nodes, 4 at 10,000),
// where a kad-dht lookup costs about BucketSize + 3·log2(N/BucketSize),
// BucketSize of them landing on the nodes nearest pos. It is what a
// party needs that wants a neighbourhood's nodes rather than the exact
// closest r of a key (a keyword region's view); answers are not cached.
func (d *DHT) Walk(ctx context.Context, pos keyspace.Pos, n int) ([]peer.ID, error) {
	if n < 1 || n > wire.MaxNearCount {
		return nil, fmt.Errorf("walk to %s: count %d out of 1..%d", pos.Short(), n, wire.MaxNearCount)
	}
	self := d.ep.ID()
	known := d.NearestLocal(pos, n)
	asked := map[peer.ID]bool{}
	var rpcs int64
	defer func() {
		d.walks.Add(1)
		d.walkRPCs.Add(rpcs)
	}()
	for range maxWalkHops {
		var next peer.ID
		for _, p := range known {
			if p == self || asked[p] {
				break // the nearest known has answered (or is us): done
			}
			if !d.IsMarkedDead(p) {
				next = p
				break
			}
		}
		if next == "" {
			break
		}
		asked[next] = true
		rpcs++
		got, err := d.Near(ctx, next, pos, n)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("walk to %s: %w", pos.Short(), ctx.Err())
			}
			known = slices.DeleteFunc(known, func(p peer.ID) bool { return p == next })
			continue
		}
		for _, p := range got {
			if !slices.Contains(known, p) {
				known = append(known, p)
			}
		}
		SortPeers(pos, known)
		known = known[:min(len(known), 2*n)]
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("walk to %s: no node known", pos.Short())
	}
	return known[:min(n, len(known))], nil
}

// WalkStats reports the walks so far.
func (d *DHT) WalkStats() WalkStats {
	return WalkStats{Walks: d.walks.Load(), RPCs: d.walkRPCs.Load()}
}
