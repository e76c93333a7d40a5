package pool

import (
	"context"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/wire"
)

// HandOff places every held job on the r closest live nodes other than
// this one, which is about to leave its position: each job ends up where
// it will belong once this node is gone. It syncs states first and sends
// whole jobs only to nodes that lack them. It returns how many jobs it
// had to send.
func (p *Pool) HandOff(ctx context.Context) int {
	return p.Spread(ctx, p.Keys(), true)
}

// Spread makes sure the r closest live nodes (without this node when
// leaving is set) hold each of keys: a sync of states to each, and the
// whole job only where it is missing. It returns how many jobs it sent.
func (p *Pool) Spread(ctx context.Context, keys [][]byte, leaving bool) int {
	self := p.self()
	plan := map[peer.ID][]wire.SyncItem{}
	for _, k := range keys {
		st, ok := p.stored(k) // unexpired: each receiver judges a lapse itself
		if !ok {
			continue
		}
		view := p.dht.NearestLive(ctx, keyspace.KeyPos(k), p.r+1)
		if leaving {
			view = slices.DeleteFunc(view, func(q peer.ID) bool { return q == self })
		}
		for _, t := range view[:min(p.r, len(view))] {
			if t != self {
				plan[t] = append(plan[t], wire.SyncItem{Key: k, State: st})
			}
		}
	}
	var st RoundStats
	for t, items := range plan {
		_ = p.syncWith(ctx, t, items, &st)
	}
	return st.Repaired
}

// ClosestPositions returns the positions of the held jobs this node is the
// closest to (its n_job items for a load split).
func (p *Pool) ClosestPositions() []keyspace.Pos {
	nearest := p.dht.SelfNearestFunc()
	var out []keyspace.Pos
	p.Each(func(h Held) bool {
		if nearest(h.Pos) {
			out = append(out, h.Pos)
		}
		return true
	})
	return out
}
