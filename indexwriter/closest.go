package indexwriter

import (
	"context"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
)

// closestAmong is how many of the nodes nearest a job's position (this one
// included) isClosest looks at.
const closestAmong = 8

// closestFunc is rankPass without a prober: live is not marked dead.
func (w *Writer) closestFunc() func(pos keyspace.Pos) int {
	return w.rankPass(context.Background(), nil, nil)
}

// rankPass returns rank for many positions in a row from one snapshot of
// the routing table, its peers' positions hashed once: this node's rank
// is the number of live peers nearer to pos than itself, when that is
// below Listers and fewer than closestAmong are nearer in all; else -1.
// Live is not marked dead and, with a prober, answering its probe; the
// nearer peers are probed nearest first, as rank walks them, so the same
// peers are probed. Where rank sorts the whole table for each position
// (NearestLocal), this sorts only the few peers nearer than this node —
// a full round ranks every job the node holds. The nearer peers a rank
// looks at are added to ahead unless it is nil: the caller holds w.busy,
// which orders these writes with the rounds' reads.
func (w *Writer) rankPass(ctx context.Context, probe *dht.Prober, ahead map[peer.ID]bool) func(pos keyspace.Pos) int {
	if !w.d.IsServer() {
		return func(keyspace.Pos) int { return -1 } // never among NearestLocal's
	}
	self := w.d.ID()
	ps := w.d.TablePositions()
	me, listers := w.d.Self(), w.cfg.Listers
	nearer := make([]dht.PeerAt, 0, closestAmong)
	return func(pos keyspace.Pos) int {
		nearer = nearer[:0]
		for _, q := range ps {
			if q.ID == self || !keyspace.CloserTo(pos, q.Pos, me) {
				continue
			}
			if nearer = append(nearer, q); len(nearer) >= closestAmong {
				return -1
			}
		}
		if probe != nil {
			slices.SortFunc(nearer, func(a, b dht.PeerAt) int {
				return keyspace.Compare(keyspace.Distance(a.Pos, pos), keyspace.Distance(b.Pos, pos))
			})
		}
		live := 0
		for _, q := range nearer {
			if ahead != nil {
				ahead[q.ID] = true
			}
			if w.d.IsMarkedDead(q.ID) || probe != nil && !probe.Alive(ctx, q.ID) {
				continue
			}
			if live++; live >= listers {
				return -1
			}
		}
		return live
	}
}

// ListingRank reports, for diagnostics, this node's rank among the live
// nodes nearest a job's position (-1: not among the Listers nearest) and,
// for a backup lister, since when (ms) it has seen the job listable.
func (w *Writer) ListingRank(pos keyspace.Pos, key []byte) (rank int, backupSince int64) {
	rank = w.closestFunc()(pos)
	w.mu.Lock()
	defer w.mu.Unlock()
	return rank, w.backups[string(key)]
}
