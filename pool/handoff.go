package pool

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/replica"
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
		item, ok := p.storedItem(k) // unexpired (each receiver judges a lapse itself), with its proof
		if !ok {
			continue
		}
		view := p.dht.NearestLive(ctx, p.posOf(k), p.r+1)
		if leaving {
			view = slices.DeleteFunc(view, func(q peer.ID) bool { return q == self })
		}
		for _, t := range view[:min(p.r, len(view))] {
			if t != self {
				plan[t] = append(plan[t], item)
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

// handOnGather is how long the hand-on waits after a node enters the
// routing table for others to follow (a burst of joins goes out in one
// batch per newcomer); handOnGrace is how long the previous closest keeps
// listing a job it handed on, so the newcomer's listing is up first.
const (
	handOnGather = replica.HandOnGatherMS * time.Millisecond
	handOnGrace  = replica.HandOnGraceMS * time.Millisecond
)

// handOns is the hand-on on join: the nodes that entered the routing
// table and are yet to be given the jobs whose r closest they entered,
// and the jobs handed on to a newer closest lately.
type handOns struct {
	mu      sync.Mutex
	pending map[peer.ID]keyspace.Pos
	handed  map[string]int64 // job key → when (ms) it was handed on
	kick    chan struct{}
	stats   HandOnStats
}

// HandOnStats counts what the hand-on on join did since the pool opened:
// the syncs to newcomers, and how many nodes entered the routing table.
type HandOnStats struct {
	Newcomers int // nodes that entered the routing table
	SyncCounts
}

// SyncCounts counts the syncs a hand-on or a repair sent (sendPlan).
type SyncCounts struct {
	Jobs   int // job states sent (one per job and target)
	Stored int // whole jobs sent to targets that lacked them
	RPCs   int // sync and store calls that completed
	Bytes  int // request and reply bytes of those calls
	Failed int // targets that did not answer
}

// add adds o to c.
func (c *SyncCounts) add(o SyncCounts) {
	c.Jobs += o.Jobs
	c.Stored += o.Stored
	c.RPCs += o.RPCs
	c.Bytes += o.Bytes
	c.Failed += o.Failed
}

// sendPlan syncs each target the items planned for it, batched (the
// target stores the whole job where it lacks it); a target that fails is
// marked dead. It returns the counts and the keys of the jobs sent.
func (p *Pool) sendPlan(ctx context.Context, plan map[peer.ID][]wire.SyncItem) (SyncCounts, map[string]bool) {
	var out SyncCounts
	sent := map[string]bool{}
	for q, items := range plan {
		var st RoundStats
		err := p.syncWith(ctx, q, items, &st)
		out.RPCs += st.RPCs
		out.Stored += st.Repaired
		out.Bytes += st.BytesSent + st.BytesReceived
		if err != nil {
			out.Failed++
			p.dht.MarkDead(q)
			continue
		}
		out.Jobs += len(items)
		for _, it := range items {
			sent[string(it.Key)] = true
		}
	}
	return out, sent
}

// startHandOn has every node that enters the routing table given, at
// once, the held jobs whose r closest it entered and that this node was
// the closest of (replica.HandOnTo): a node that joins nearer a job holds it, and
// lists it, without waiting a republish period.
func (p *Pool) startHandOn() {
	p.handOns.pending = map[peer.ID]keyspace.Pos{}
	p.handOns.handed = map[string]int64{}
	p.handOns.kick = make(chan struct{}, 1)
	p.dht.OnPeerAdded(p.peerAdded)
	p.goLoop(p.handOnLoop)
}

// peerAdded records a node that entered the routing table. It runs with
// the routing table locked: it only records.
func (p *Pool) peerAdded(q peer.ID) {
	h := &p.handOns
	h.mu.Lock()
	h.pending[q] = keyspace.PeerPos([]byte(q))
	h.stats.Newcomers++
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

func (p *Pool) handOnLoop() {
	p.gatherLoop(p.handOns.kick, handOnGather, func() { p.HandOnNow(p.ctx) })
}

// gatherLoop runs run gather after each kick, until the pool closes: the
// kicks that come meanwhile go out in the same run.
func (p *Pool) gatherLoop(kick <-chan struct{}, gather time.Duration, run func()) {
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-kick:
		}
		t := time.NewTimer(gather)
		select {
		case <-p.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		run()
	}
}

// HandOnNow gives the nodes that entered the routing table since the last
// call the held jobs they are to get from this node (replica.HandOnTo): a sync of
// the jobs' states to each, batched, and the whole job where it is
// missing. The newcomers stay pending — and this node keeps listing the
// jobs they are nearer to (ListingHeld) — until they were sent their jobs.
func (p *Pool) HandOnNow(ctx context.Context) HandOnStats {
	h := &p.handOns
	h.mu.Lock()
	newcomers := make([]peer.ID, 0, len(h.pending))
	for q := range h.pending {
		newcomers = append(newcomers, q)
	}
	h.mu.Unlock()
	if len(newcomers) == 0 {
		return HandOnStats{}
	}
	self := p.self()
	known := p.dht.RoutingTableSize() - len(newcomers)
	plan := map[peer.ID][]wire.SyncItem{}
	p.Each(func(j Held) bool {
		view := p.liveLocal(j.Pos, p.r+len(newcomers))
		targets := replica.HandOnTo(self, newcomers, view, known, p.r)
		if len(targets) == 0 {
			return true
		}
		// As a sync sends it: unexpired, with its proof (a state without
		// one would be refused, and counted against this node).
		item, ok := p.storedItem(j.Key)
		if !ok {
			return true
		}
		for _, q := range targets {
			plan[q] = append(plan[q], item)
		}
		return true
	})
	counts, handed := p.sendPlan(ctx, plan)
	out := HandOnStats{SyncCounts: counts}
	now := p.nowMS()
	h.mu.Lock()
	for _, q := range newcomers {
		delete(h.pending, q)
	}
	for k, at := range h.handed {
		if now-at >= handOnGrace.Milliseconds() {
			delete(h.handed, k)
		}
	}
	for k := range handed {
		h.handed[k] = now
	}
	h.stats.add(counts)
	h.mu.Unlock()
	return out
}

// HandOnTotals returns what the hand-on on join did since the pool opened.
func (p *Pool) HandOnTotals() HandOnStats {
	p.handOns.mu.Lock()
	defer p.handOns.mu.Unlock()
	return p.handOns.stats
}

// ListingHeld reports whether this node keeps listing a job although a
// newer node is its closest: a node that entered the routing table nearer
// the job than this one has not been sent its jobs yet, or this node
// handed the job on less than a grace ago. The newcomer lists the job as
// soon as it holds it; until then the previous closest's listing stands,
// so the job stays findable throughout.
func (p *Pool) ListingHeld(key []byte) bool {
	pos, me := p.posOf(key), keyspace.PeerPos([]byte(p.self()))
	now := p.nowMS()
	h := &p.handOns
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.pending {
		if keyspace.CloserTo(pos, q, me) {
			return true
		}
	}
	at, ok := h.handed[string(key)]
	return ok && now-at < handOnGrace.Milliseconds()
}

// liveLocal returns the n nodes nearest pos in the routing table (this
// node included) that are not marked dead. No RPC.
func (p *Pool) liveLocal(pos keyspace.Pos, n int) []peer.ID {
	view := p.dht.NearestLocal(pos, n+4)
	view = slices.DeleteFunc(view, p.dht.IsMarkedDead)
	return view[:min(n, len(view))]
}
