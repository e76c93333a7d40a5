package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/loadbalance"
	"github.com/up-pool/up/wire"
)

// loadReportAge is how long a piggy-backed load report is reused before it
// is computed again (counting the jobs a node is the closest to walks its
// pool).
const loadReportAge = time.Second

// piggyback is the state of load piggy-backing (thesis 4.2.1: a node learns
// of a hot spot from ordinary traffic, not only from its periodic probe).
type piggyback struct {
	report     *wire.LoadInfo // the last computed report
	reportedAt time.Time
	reacting   bool  // a reaction is in flight
	reactedAt  int64 // Unix ms of the last reaction
}

// servePiggyback makes the instance's replies to nodes carry this node's
// load, and the loads in replies it receives start a balance with their
// sender when the two differ enough to move (when automatic balancing is
// on).
func (n *Node) servePiggyback(in *instance) {
	var observe func(peer.ID, *wire.LoadInfo)
	if n.balanceCfg().Interval >= 0 {
		observe = n.observeLoad
	}
	in.ep.SetLoad(func() *wire.LoadInfo { return n.reportLoad(in) }, observe)
}

// reportLoad is the load this node piggy-backs, at most loadReportAge old.
func (n *Node) reportLoad(in *instance) *wire.LoadInfo {
	now := n.cfg.Now()
	n.lb.mu.Lock()
	r, at := n.lb.pb.report, n.lb.pb.reportedAt
	n.lb.mu.Unlock()
	if r != nil && now.Sub(at) < loadReportAge && now.Sub(at) >= 0 {
		return r
	}
	r = n.loadInfo(in)
	n.lb.mu.Lock()
	n.lb.pb.report, n.lb.pb.reportedAt = r, now
	n.lb.mu.Unlock()
	return r
}

// observeLoad reacts to a load a node's reply carried: if one of the two
// should move (loadbalance.Decide) and no reaction ran within the
// cool-down, it balances with that node in the background. It never
// blocks the call that carried the load.
func (n *Node) observeLoad(from peer.ID, li *wire.LoadInfo) {
	cfg := n.balanceCfg()
	now := n.cfg.Now().UnixMilli()
	n.lb.mu.Lock()
	busy := n.lb.pb.reacting || (n.lb.pb.reactedAt != 0 && now-n.lb.pb.reactedAt < cfg.Params.CoolDown)
	n.lb.mu.Unlock()
	if busy || n.ctx.Err() != nil {
		return
	}
	in := n.cur()
	mine := n.reportLoad(in)
	self := loadbalance.Load{IndexEntries: int(mine.IndexEntries), ClosestJobs: int(mine.ClosestJobs), Rate: mine.Rate,
		Capacity: mine.Capacity, LastMove: mine.LastMove, LastChange: mine.LastChange}
	theirs := loadbalance.Load{IndexEntries: int(li.IndexEntries), ClosestJobs: int(li.ClosestJobs), Rate: li.Rate,
		Capacity: li.Capacity, LastMove: li.LastMove, LastChange: li.LastChange}
	if loadbalance.Decide(self, theirs, now, cfg.Params).Verdict == loadbalance.None {
		return
	}
	n.lb.mu.Lock()
	if n.lb.pb.reacting {
		n.lb.mu.Unlock()
		return
	}
	n.lb.pb.reacting, n.lb.pb.reactedAt = true, now
	n.lb.mu.Unlock()
	if !n.startBalance() {
		n.lb.mu.Lock()
		n.lb.pb.reacting = false
		n.lb.mu.Unlock()
		return
	}
	go func() {
		defer n.lbWG.Done()
		defer func() {
			n.lb.mu.Lock()
			n.lb.pb.reacting = false
			n.lb.mu.Unlock()
		}()
		n.lb.mu.Lock()
		n.lb.reactions++
		n.lb.mReactions.Inc()
		n.lb.mu.Unlock()
		d, err := n.balanceWith(n.ctx, from, true)
		if err != nil {
			n.log.Debug("balance on piggy-backed load", "peer", from, "err", err)
		} else if d.Verdict != loadbalance.None {
			n.log.Info("balance on piggy-backed load", "peer", from, "verdict", d.Verdict, "self", d.Self, "other", d.Other)
		}
	}()
}
