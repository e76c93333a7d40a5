package dht

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
)

// liveness remembers peers that failed to answer, so the closest-live
// views used for replication skip them, and re-probes them after a
// backoff so a healed partition is noticed. A peer that proves itself in a
// hello is alive again at once.
type liveness struct {
	mu   sync.Mutex
	dead map[peer.ID]deadMark
}

type deadMark struct {
	retryAt time.Time
	backoff time.Duration
}

// IsAlive reports whether p answers: this party, a connected peer, or one
// that can be dialled within the probe timeout. A peer that fails is
// skipped until its backoff passes.
func (d *DHT) IsAlive(ctx context.Context, p peer.ID) bool {
	if p == d.ep.ID() {
		return true
	}
	now := d.env.Now()
	d.live.mu.Lock()
	mark, dead := d.live.dead[p]
	d.live.mu.Unlock()
	if dead && now.Before(mark.retryAt) {
		return false
	}
	h := d.ep.Raw()
	if h.Network().Connectedness(p) == network.Connected {
		if _, ok := d.ep.Admission().Get(p); ok {
			d.markAlive(p)
			return true
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ProbeTimeout)
	defer cancel()
	err := h.Connect(ctx, peer.AddrInfo{ID: p})
	if err == nil {
		_, err = d.ep.WaitAdmitted(ctx, p)
	}
	if err != nil {
		d.MarkDead(p)
		return false
	}
	d.markAlive(p)
	return true
}

// MarkDead records that p failed to answer: views skip it until the
// backoff (ProbeBackoff, doubling up to 16×) passes, and cached lookups
// naming it are dropped.
func (d *DHT) MarkDead(p peer.ID) {
	now := d.env.Now()
	d.live.mu.Lock()
	mark := d.live.dead[p]
	switch {
	case mark.backoff == 0:
		mark.backoff = d.cfg.ProbeBackoff
	case mark.backoff < 16*d.cfg.ProbeBackoff:
		mark.backoff *= 2
	}
	mark.retryAt = now.Add(mark.backoff)
	d.live.dead[p] = mark
	d.live.mu.Unlock()
	d.cache.purgePeer(p)
	d.peerDown(p)
}

func (d *DHT) markAlive(p peer.ID) {
	d.live.mu.Lock()
	delete(d.live.dead, p)
	d.live.mu.Unlock()
}

// IsMarkedDead reports whether p is currently skipped.
func (d *DHT) IsMarkedDead(p peer.ID) bool {
	d.live.mu.Lock()
	defer d.live.mu.Unlock()
	mark, ok := d.live.dead[p]
	return ok && d.env.Now().Before(mark.retryAt)
}

// NearestUnmarked returns the n peers nearest to the raw position pos
// from the local view (this party included when it is a node), leaving
// out those marked dead (IsMarkedDead), without probing anyone: the view
// a node judges by when it must answer at once (a confirm's "among the
// job's closest"). Nearest first.
func (d *DHT) NearestUnmarked(pos keyspace.Pos, n int) []peer.ID {
	return d.nearestWhere(context.Background(), pos, n, func(p peer.ID) bool { return p == d.ep.ID() || !d.IsMarkedDead(p) })
}

// nearestWhere returns the n peers nearest to pos from the local view that
// keep accepts, widening the candidates until n are found, the view runs
// out, or ctx ends.
func (d *DHT) nearestWhere(ctx context.Context, pos keyspace.Pos, n int, keep func(peer.ID) bool) []peer.ID {
	for extra := 4; ; extra *= 2 {
		cands := d.NearestLocal(pos, n+extra)
		out := make([]peer.ID, 0, n)
		for _, p := range cands {
			if keep(p) {
				out = append(out, p)
				if len(out) == n {
					return out
				}
			}
		}
		if len(cands) < n+extra || ctx.Err() != nil {
			return out
		}
	}
}

// NearestLive returns the n live peers nearest to the raw position pos from
// the local view (this party included when it is a node), probing those
// not known to be alive. Nearest first.
func (d *DHT) NearestLive(ctx context.Context, pos keyspace.Pos, n int) []peer.ID {
	return d.nearestWhere(ctx, pos, n, func(p peer.ID) bool { return d.IsAlive(ctx, p) })
}

// Prober checks liveness with a real RPC, each peer at most once: one
// republish round uses one, so a peer that died since the last round is
// noticed even while its connection looks open.
type Prober struct {
	d     *DHT
	seen  map[peer.ID]bool
	heard int // peers taken as alive from recent traffic, not pinged
}

// Heard is how many peers this prober took as alive because they were
// heard from lately, without a ping.
func (pr *Prober) Heard() int { return pr.heard }

// NewProber starts a set of probes.
func (d *DHT) NewProber() *Prober { return &Prober{d: d, seen: map[peer.ID]bool{}} }

// Alive pings p (once per Prober) unless it is marked dead or was heard
// from within ProbeFresh (a reply or a request on a live connection); a
// failed ping marks it dead.
func (pr *Prober) Alive(ctx context.Context, p peer.ID) bool {
	if p == pr.d.ep.ID() {
		return true
	}
	if ok, done := pr.seen[p]; done {
		return ok
	}
	ok := false
	switch {
	case pr.d.IsMarkedDead(p):
	case !pr.d.cfg.AlwaysProbe && pr.d.ep.HeardWithin(p, pr.d.cfg.ProbeFresh):
		pr.heard++
		ok = true
	default:
		cctx, cancel := context.WithTimeout(ctx, pr.d.cfg.ProbeTimeout)
		err := pr.d.ep.Ping(cctx, p)
		cancel()
		if err != nil {
			pr.d.MarkDead(p)
		} else {
			pr.d.markAlive(p)
			ok = true
		}
	}
	pr.seen[p] = ok
	return ok
}

// NearestLive is DHT.NearestLive with this prober's probes.
func (pr *Prober) NearestLive(ctx context.Context, pos keyspace.Pos, n int) []peer.ID {
	return pr.d.nearestWhere(ctx, pos, n, func(p peer.ID) bool { return pr.Alive(ctx, p) })
}

// NearestLiveMany is NearestLive of each position (views[i] for poss[i]),
// computed once for each run of positions that no peer of the table
// orders differently: the order of two peers by distance to a position
// is decided by the first bit at which the two peers differ, so positions
// that agree on the first SeparatingDepth bits see every peer in one
// order, and — each peer's liveness probed once per Prober — get one
// view. Positions are visited in key order; a view is shared by the
// positions it is given to and must not be modified. A republish round
// ranks every held job this way (tens of thousands per round).
func (pr *Prober) NearestLiveMany(ctx context.Context, poss []keyspace.Pos, n int) [][]peer.ID {
	views := make([][]peer.ID, len(poss))
	order := make([]int, len(poss))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return keyspace.Compare(poss[a], poss[b]) })
	gen, depth, prev := ^uint64(0), 0, -1
	for _, i := range order {
		if g := pr.d.TableGen(); g != gen {
			gen, depth, prev = g, pr.d.SeparatingDepth(), -1
		}
		if prev >= 0 && keyspace.CommonPrefixLen(poss[i], poss[prev]) >= depth {
			views[i] = views[prev]
			continue
		}
		views[i] = pr.NearestLive(ctx, poss[i], n)
		prev = i
		if pr.d.TableGen() != gen { // ranked on another table: not shared
			prev = -1
		}
	}
	return views
}

// SeparatingDepth is one more than the longest prefix two peers of the
// routing table (this node included when it serves the DHT) share: two
// positions that agree on that many bits have the same peers nearest, in
// the same order. 0 with fewer than two peers.
func (d *DHT) SeparatingDepth() int {
	table := d.TablePositions()
	ps := make([]keyspace.Pos, 0, len(table)+1)
	for _, q := range table {
		ps = append(ps, q.Pos)
	}
	if d.IsServer() {
		ps = append(ps, keyspace.PeerPos([]byte(d.ep.ID())))
	}
	if len(ps) < 2 {
		return 0
	}
	slices.SortFunc(ps, keyspace.Compare)
	most := 0
	for i := 1; i < len(ps); i++ { // in key order the longest shared prefix is between neighbours
		most = max(most, keyspace.CommonPrefixLen(ps[i-1], ps[i]))
	}
	return most + 1
}
