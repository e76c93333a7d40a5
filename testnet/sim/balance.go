package sim

import (
	"cmp"
	"slices"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/loadbalance"
)

// params are the load balancer's parameters from the config.
func (s *Sim) params() loadbalance.Params {
	return loadbalance.Params{Phi: s.c.Phi, Trivial: s.c.Trivial, WIndex: s.c.WIndex, WJob: s.c.WJob,
		WRate: s.c.WRate, CoolDown: ms(s.c.CoolDown)}
}

// load is what node id reports when probed (or probing).
func (s *Sim) load(id int32) loadbalance.Load {
	n := &s.nodes[id]
	l := loadbalance.Load{LastMove: n.lastMove, LastChange: n.lastChange}
	if n.idx != nil {
		l.IndexEntries = n.idx.Len()
	}
	for j := range n.jobs {
		if s.isClosest(id, j) {
			l.ClosestJobs++
		}
	}
	if dt := s.e.now - n.winStart; dt > 0 {
		l.Rate = float64(n.winRPC) * 1000 / float64(dt)
	}
	return l
}

// items are the heavy node's weighted items: its index entries' points
// and the positions of the jobs it is the closest node for.
func (s *Sim) items(id int32) []loadbalance.Item {
	n := &s.nodes[id]
	var idx, jobs []keyspace.Pos
	if n.idx != nil {
		n.idx.Each(s.e.now, func(e index.Entry) bool {
			idx = append(idx, e.Point)
			return true
		})
	}
	for _, j := range sortedKeys(n.jobs) {
		if s.isClosest(id, j) {
			jobs = append(jobs, s.jobs[j].pos)
		}
	}
	slices.SortFunc(idx, keyspace.Compare)
	return loadbalance.Weighted(idx, jobs, s.params())
}

// balance is a node's load-balancing round (thesis 3.4, 4.2.1): probe the
// node its routing table holds nearest a random key, loadbalance.Decide, and if one must move,
// the lighter lands in the split region loadbalance.SplitFrom picks beyond
// the heavy node's nearest neighbour.
func (s *Sim) balance(id int32) {
	n := &s.nodes[id]
	s.e.after(s.e.uniform(ms(s.c.BalanceMin), ms(s.c.BalanceMax)), event{kind: evBalance, node: id, gen: n.gen})
	key := keyspace.Region{}.RandomPoint(s.e.rng)
	// The node's routing table's nearest to the key (node.BalanceRound:
	// dht.NearestLocal, no lookup).
	var buf [2]int32
	other := int32(-1)
	for _, c := range s.nearestLocal(partyTag(id, n.gen), n.pos, id, n.side, key, 2, buf[:0]) {
		if c != id {
			other = c
			break
		}
	}
	if other < 0 {
		return
	}
	s.balanceWith(id, other)
}

// balanceWith is node id's balance with node other (a probe, then
// loadbalance.Decide, and a move of the lighter when one must move):
// after its periodic probe picked other, or when other's reply carried a
// load id should react to (observe).
func (s *Sim) balanceWith(id, other int32) {
	n := &s.nodes[id]
	now := s.e.now
	s.count(other, kLB, s.c.SizeState)
	self, ol := s.load(id), s.load(other)
	n.winRPC, n.winStart = 0, now
	d := loadbalance.Decide(self, ol, now, s.params())
	mover, heavy := id, other
	switch d.Verdict {
	case loadbalance.None:
		return
	case loadbalance.OtherMoves:
		mover, heavy = other, id
	}
	h := &s.nodes[heavy]
	s.scratch = s.view(h.side).closest(h.pos, s.c.K+1, s.scratch[:0])
	var others []keyspace.Pos
	for _, o := range s.scratch {
		if o != heavy && o != mover {
			others = append(others, s.nodes[o].pos)
		}
	}
	target, _, _, _, ok := loadbalance.SplitFrom(h.pos, s.items(heavy), loadbalance.MinSplitBit(h.pos, others), s.c.SplitSlack)
	if !ok {
		return
	}
	s.move(mover, heavy, target.RandomPoint(s.e.rng))
}

// move relocates node m next to the heavy node h (its identity ground to
// the target prefix; grinding costs no simulated time): m hands its jobs
// to the nodes that will be their r closest without it and its index
// entries to the nodes closest to their points, takes a new identity at
// pos, and h hands m the index entries m is now closer to (docs/design.md:
// directly, not by waiting for rewrites). Jobs reach m by republishing.
func (s *Sim) move(m, h int32, pos keyspace.Pos) {
	mn := &s.nodes[m]
	now := s.e.now
	if s.rings[0].closestOne(pos) >= 0 && s.nodes[s.rings[0].closestOne(pos)].pos == pos {
		return
	}
	v := s.view(mn.side)
	// Jobs: to the r closest other than m, then gone from m.
	sent := map[int32]int{}
	for _, j := range sortedKeys(mn.jobs) {
		st := job.Expire(mn.jobs[j].st, now)
		s.scratch = v.closest(s.jobs[j].pos, s.c.R+1, s.scratch[:0])
		for _, t := range slices.Clone(s.scratch) {
			if t == m {
				continue
			}
			sent[t]++
			s.putReplica(t, j, st)
		}
	}
	for _, t := range sortedKeys(sent) {
		s.count(t, kJob, sent[t]*s.c.SizeState)
	}
	for _, j := range sortedKeys(mn.jobs) {
		s.dropReplica(m, j)
	}
	// Index entries: to the node closest to each point once m is gone.
	old := mn.idx
	mn.idx = nil
	s.ringsDel(m)
	if old != nil {
		s.handEntries(old, func(e index.Entry) int32 { return v.closestOne(e.Point) }, kIndex)
	}
	// The new identity.
	mn.gen++
	mn.name = nodeName(m, mn.gen)
	mn.pos = pos
	mn.cache = map[uint64]int64{}
	mn.rv = [2]regionView{}
	mn.wq, mn.flushAt, mn.expiring = nil, 0, false
	mn.born, mn.lastMove, mn.lastChange = now, now, now
	mn.winRPC, mn.winStart = 0, now
	mn.loadAt = -1
	s.ringsAdd(m)
	s.timers(m)
	// The heavy node hands over what m is now closer to.
	hn := &s.nodes[h]
	if hn.idx != nil {
		var give []index.Entry
		hn.idx.Each(now, func(e index.Entry) bool {
			if keyspace.CloserTo(e.Point, pos, hn.pos) {
				give = append(give, e)
			}
			return true
		})
		slices.SortFunc(give, func(a, b index.Entry) int { return cmp.Compare(jobID(a.Job), jobID(b.Job)) })
		for _, e := range give {
			hn.idx.Withdraw(e.Keyword, e.Job, "", now)
			s.putEntry(m, e)
		}
		if len(give) > 0 {
			s.count(m, kLB, len(give)*s.c.SizeEntry)
		}
	}
	hn.lastChange = now
	hn.loadAt = -1
	s.m.moves++
}

// handEntries gives every entry of t to the node dest picks.
func (s *Sim) handEntries(t *index.Table, dest func(index.Entry) int32, k rpcKind) {
	var all []index.Entry
	t.Each(s.e.now, func(e index.Entry) bool {
		all = append(all, e)
		return true
	})
	slices.SortFunc(all, func(a, b index.Entry) int {
		if c := cmp.Compare(jobID(a.Job), jobID(b.Job)); c != 0 {
			return c
		}
		return cmp.Compare(a.Keyword, b.Keyword)
	})
	per := map[int32]int{}
	for _, e := range all {
		to := dest(e)
		if to < 0 {
			continue
		}
		per[to]++
		s.putEntry(to, e)
	}
	for _, to := range sortedKeys(per) {
		s.count(to, k, per[to]*s.c.SizeEntry)
	}
}

// putEntry stores a handed-over entry at node to, keeping its quarantine
// out (Put starts it fresh) and pointing the writer record at to.
func (s *Sim) putEntry(to int32, e index.Entry) {
	s.table(to).Put(e, s.e.now)
	j := jobID(e.Job)
	r := &s.jobs[j]
	if s.kwName(r.wKw) == e.Keyword && r.wKw >= 0 {
		r.wTo, r.wToGen = to, s.nodes[to].gen
	}
}

// loadReportAge is how long (ms) a node reuses the load it piggy-backs on
// its replies before computing it again (node.loadReportAge).
const loadReportAge = 1000

// reportedLoad is the load node id piggy-backs on its replies, at most
// loadReportAge old.
func (s *Sim) reportedLoad(id int32) loadbalance.Load {
	n := &s.nodes[id]
	if n.loadAt < 0 || s.e.now-n.loadAt >= loadReportAge {
		n.load, n.loadAt = s.load(id), s.e.now
	}
	return n.load
}

// decideObserved is loadbalance.Decide(self's load, other, now) without
// counting the jobs self is the closest to when it need not: the verdict
// is SelfMoves for self loads below a bound, OtherMoves above another and
// None between (the cool-down checks do not depend on the load), so when
// self counted as the closest to none of its jobs and to all of them gets
// one verdict, that is the verdict.
func (s *Sim) decideObserved(self int32, other loadbalance.Load, now int64) loadbalance.Verdict {
	n := &s.nodes[self]
	p := s.params()
	lo := loadbalance.Load{LastMove: n.lastMove, LastChange: n.lastChange}
	if n.idx != nil {
		lo.IndexEntries = n.idx.Len()
	}
	if dt := now - n.winStart; dt > 0 {
		lo.Rate = float64(n.winRPC) * 1000 / float64(dt)
	}
	hi := lo
	hi.ClosestJobs = len(n.jobs)
	if v := loadbalance.Decide(lo, other, now, p).Verdict; v == loadbalance.Decide(hi, other, now, p).Verdict {
		return v
	}
	return loadbalance.Decide(s.reportedLoad(self), other, now, p).Verdict
}

// observe is node id reading the load that node other's reply to it
// carried (node.observeLoad, thesis 4.2.1: a node learns of a hot spot
// from ordinary traffic, not only from its periodic probe): when one of
// the two should move and id has not reacted within the cool-down, id
// balances with other, as an event of its own so that the reply's
// handling is not disturbed by a move.
func (s *Sim) observe(id, other int32) {
	if !s.c.Balance || s.c.NoPiggyback || id == other || id < 0 {
		return
	}
	n, o := &s.nodes[id], &s.nodes[other]
	now := s.e.now
	if !n.alive || !o.alive || (n.reactedAt != 0 && now-n.reactedAt < ms(s.c.CoolDown)) {
		return
	}
	if s.decideObserved(id, s.reportedLoad(other), now) == loadbalance.None {
		return
	}
	n.reactedAt = now
	s.m.reactions++
	s.e.after(0, event{kind: evReact, node: id, gen: n.gen, arg: other, job: int32(o.gen)})
}

// react runs a reaction observe scheduled, if both incarnations are
// still there.
func (s *Sim) react(ev event) {
	o := &s.nodes[ev.arg]
	if !s.alive(ev) || !o.alive || int32(o.gen) != ev.job {
		return
	}
	s.balanceWith(ev.node, ev.arg)
}
