package pool

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/replica"
	"github.com/up-pool/up/wire"
)

// repairGather is how long the repair on departure waits after a node
// left the routing table for others to follow (a burst of departures
// goes out in one batch per target).
const repairGather = replica.RepairGatherMS * time.Millisecond

// repairs is the repair on departure: the nodes that left the routing
// table and are yet to have the jobs whose r closest they were among
// given to the nodes that took their place.
type repairs struct {
	mu      sync.Mutex
	pending map[peer.ID]bool
	// done are the departed nodes already repaired and not heard from
	// since: a node marked dead again and again (each failed call to it)
	// is repaired once per departure.
	done  map[peer.ID]bool
	kick  chan struct{}
	stats RepairStats
}

// RepairStats counts what the repair on departure did since the pool
// opened: the syncs to nodes that entered a job's r closest in a departed
// node's place, and how many departures were heard of.
type RepairStats struct {
	Departed int // departures heard of (a node back in between counts again)
	SyncCounts
}

// watchDepartures has every node that leaves the routing table (kad-dht
// drops a peer when its last connection closes) replaced, at once, in the
// r closest of the held jobs this node is now the closest live node of
// (replica.RepairTo): a job keeps r live replicas between republish
// rounds, instead of losing one with each departure until the next round
// — under heavy churn every replica of a job could be down at once. A
// node back before the repair ran is not replaced.
//
// watchDepartures records the departures (always: tests call RepairNow);
// the loop that repairs after each burst runs with the pool's loops.
func (p *Pool) watchDepartures() {
	rp := &p.repairs
	rp.pending = map[peer.ID]bool{}
	rp.done = map[peer.ID]bool{}
	rp.kick = make(chan struct{}, 1)
	p.dht.OnPeerDown(p.peerRemoved)
	// Every node entering the routing table was admitted first.
	p.ep.OnAdmit(func(a *overlay.Admitted) {
		p.peerBack(a.Peer)
		p.views.admitted(a.Peer)
	})
}

// maxPendingDepartures bounds the departures waiting for a repair; more
// are left to the republish round.
const maxPendingDepartures = 1024

// peerRemoved records a node that left the routing table. It runs with
// the routing table locked: it only records.
func (p *Pool) peerRemoved(q peer.ID) {
	rp := &p.repairs
	rp.mu.Lock()
	if rp.done[q] {
		rp.mu.Unlock()
		return
	}
	if len(rp.pending) < maxPendingDepartures {
		rp.pending[q] = true
	}
	rp.stats.Departed++
	rp.mu.Unlock()
	select {
	case rp.kick <- struct{}{}:
	default:
	}
}

// peerBack forgets a departed node that is back: admitted on a new
// connection.
func (p *Pool) peerBack(q peer.ID) {
	rp := &p.repairs
	rp.mu.Lock()
	delete(rp.pending, q)
	delete(rp.done, q)
	rp.mu.Unlock()
}

func (p *Pool) repairLoop() {
	p.gatherLoop(p.repairs.kick, repairGather, func() { p.RepairNow(p.ctx) })
}

// RepairNow gives the jobs whose r closest the nodes departed since the
// last call were among, and whose closest live node this node now is, to
// the nodes that took the departed nodes' places (replica.RepairTo): a
// sync of the jobs' states to each, batched, and the whole job where it
// is missing. A failed target is not retried: the next republish round
// places its jobs. A node whose pool is catching up after a restart
// repairs nothing (its states may be stale; its catch-up round syncs).
func (p *Pool) RepairNow(ctx context.Context) RepairStats {
	rp := &p.repairs
	rp.mu.Lock()
	gone := make([]peer.ID, 0, len(rp.pending))
	for q := range rp.pending {
		if !rp.done[q] { // marked dead again by this repair's own probe
			gone = append(gone, q)
		}
	}
	rp.pending = map[peer.ID]bool{}
	rp.mu.Unlock()
	if len(gone) == 0 || p.Behind() {
		return RepairStats{}
	}
	plan, cause := p.planRepair(gone)
	// A node reported down may only have lost a trimmed connection: the
	// departed nodes the plan rests on are probed (one marked dead is not
	// pinged again), and the plan is made anew without those that answer.
	probe := p.dht.NewProber()
	n := len(cause)
	gone = slices.DeleteFunc(gone, func(q peer.ID) bool { return !cause[q] || probe.Alive(ctx, q) })
	if len(gone) < n {
		plan, _ = p.planRepair(gone)
	}
	rp.mu.Lock()
	if len(rp.done) >= maxPendingDepartures {
		rp.done = map[peer.ID]bool{}
	}
	for _, q := range gone {
		rp.done[q] = true
	}
	rp.mu.Unlock()
	counts, _ := p.sendPlan(ctx, plan)
	rp.mu.Lock()
	rp.stats.add(counts)
	rp.mu.Unlock()
	return RepairStats{SyncCounts: counts}
}

// planRepair plans the syncs that replace the departed nodes gone in the
// r closest of the held jobs (replica.RepairTo), and names the departed
// nodes the plan rests on (those among such a job's r closest).
func (p *Pool) planRepair(gone []peer.ID) (map[peer.ID][]wire.SyncItem, map[peer.ID]bool) {
	self := p.self()
	plan := map[peer.ID][]wire.SyncItem{}
	cause := map[peer.ID]bool{}
	if len(gone) == 0 {
		return plan, cause
	}
	p.Each(func(j Held) bool {
		// kad-dht keeps a peer that only disconnected in the routing
		// table: the departed are taken out of the live view, then put
		// back where they stood.
		view := slices.DeleteFunc(p.liveLocal(j.Pos, p.r+len(gone)), func(q peer.ID) bool { return slices.Contains(gone, q) })
		view = append(view, gone...)
		dht.SortPeers(j.Pos, view)
		targets := replica.RepairTo(self, gone, view, p.r)
		if len(targets) == 0 {
			return true
		}
		item, ok := p.storedItem(j.Key) // unexpired, with its proof, as a sync sends it
		if !ok {
			return true
		}
		for _, q := range targets {
			plan[q] = append(plan[q], item)
		}
		for _, q := range view[:min(p.r, len(view))] {
			if slices.Contains(gone, q) {
				cause[q] = true
			}
		}
		return true
	})
	return plan, cause
}

// RepairTotals returns what the repair on departure did since the pool
// opened.
func (p *Pool) RepairTotals() RepairStats {
	p.repairs.mu.Lock()
	defer p.repairs.mu.Unlock()
	return p.repairs.stats
}
