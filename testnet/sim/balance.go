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

// controller is the balancing controller's configuration of every node
// (node.BalanceConfig's in the real network): probes BalanceMin to
// BalanceMax apart, off without Balance.
func (c *Config) controller(lastChange int64) loadbalance.ControllerConfig {
	return loadbalance.ControllerConfig{Off: !c.Balance, ProbeMin: ms(c.BalanceMin), ProbeMax: ms(c.BalanceMax), LastChange: lastChange,
		Params: loadbalance.Params{Phi: c.Phi, Trivial: c.Trivial, WIndex: c.WIndex, WJob: c.WJob, WRate: c.WRate, CoolDown: ms(c.CoolDown)}}
}

// newController is the balancing controller of a new incarnation, which
// took over data at lastChange (0: never), drawing from the run's source.
func (s *Sim) newController(lastChange int64) *loadbalance.Controller[int32] {
	c, err := loadbalance.NewController[int32](s.c.controller(lastChange), s.e.rng)
	if err != nil {
		panic(err) // Config.Validate checked the configuration
	}
	return c
}

// first is the first action of acts; a zero Action if none.
func first(acts []loadbalance.Action[int32]) loadbalance.Action[int32] {
	if len(acts) == 0 {
		return loadbalance.Action[int32]{}
	}
	return acts[0]
}

// step steps node id's controller with ev now, counting the node's
// holdings when it asks for them (balancenet's step).
func (s *Sim) step(id int32, ev loadbalance.Event[int32]) []loadbalance.Action[int32] {
	ctl := s.nodes[id].ctl
	acts := ctl.Step(s.e.now, ev)
	if len(acts) == 1 && acts[0].Kind == loadbalance.NeedCounts {
		ev.Counts = s.counts(id)
		acts = ctl.Step(s.e.now, ev)
	}
	return acts
}

// counts are node id's holdings now and the RPCs it has received.
func (s *Sim) counts(id int32) *loadbalance.Counts {
	n := &s.nodes[id]
	c := &loadbalance.Counts{Served: float64(n.served)}
	if n.idx != nil {
		c.IndexEntries = n.idx.Len()
	}
	for j := range n.jobs {
		if s.isClosest(id, j) {
			c.ClosestJobs++
		}
	}
	return c
}

// schedule carries out the probe actions of node id's controller: the
// next evBalance, and the probe near a key (reported as probe, ok).
func (s *Sim) schedule(id int32, acts []loadbalance.Action[int32]) (probe keyspace.Pos, ok bool) {
	for _, a := range acts {
		switch a.Kind {
		case loadbalance.ScheduleProbe:
			s.e.after(a.After, event{kind: evBalance, node: id, gen: s.nodes[id].gen})
		case loadbalance.ProbeNear:
			probe, ok = a.Key, true
		}
	}
	return probe, ok
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

// balance is a node's probe (thesis 3.4, 4.2.1; balancenet.Service.Run):
// its controller schedules the next and names a random key, and the node
// balances with the node its routing table holds nearest that key.
func (s *Sim) balance(id int32) {
	n := &s.nodes[id]
	key, ok := s.schedule(id, n.ctl.Step(s.e.now, loadbalance.Event[int32]{Kind: loadbalance.ProbeDue}))
	if !ok {
		return
	}
	// The node's routing table's nearest to the key (dht.NearestLocal, no
	// lookup).
	var buf [2]int32
	for _, c := range s.nearestLocal(partyTag(id, n.gen), n.pos, id, n.side, key, 2, buf[:0]) {
		if c != id {
			s.exchange(id, c, true)
			return
		}
	}
}

// exchange is node id's exchange with node other (balancenet's exchange):
// ask other's load, and carry out what id's controller answers — nudge
// other, or ask other where to land and move there. Each message is an
// RPC other receives.
func (s *Sim) exchange(id, other int32, nudge bool) {
	s.count(other, kLB, s.c.SizeState)
	theirs := first(s.step(other, loadbalance.Event[int32]{Kind: loadbalance.LoadAsked, Counts: s.counts(other)})).Load
	a := first(s.step(id, loadbalance.Event[int32]{Kind: loadbalance.LoadAnswered, Peer: other, Load: theirs,
		Counts: s.counts(id), Nudge: nudge}))
	switch a.Kind {
	case loadbalance.SendNudge:
		s.count(other, kLB, s.c.SizeState)
		if b := first(s.step(other, loadbalance.Event[int32]{Kind: loadbalance.Nudged, Peer: id})); b.Kind == loadbalance.AskLoad {
			s.exchange(other, id, b.Nudge)
		}
	case loadbalance.AskSplit:
		s.count(other, kLB, s.c.SizeState)
		a = first(s.step(id, loadbalance.Event[int32]{Kind: loadbalance.SplitAnswered, Peer: other,
			Split: s.splitAnswer(other, id), Decision: a.Decision}))
		if a.Kind == loadbalance.MoveTo {
			s.move(id, other, a.Target.RandomPoint(s.e.rng))
		}
	}
}

// splitAnswer is the heavy node's answer to the mover asking where to
// land: the split loadbalance.SplitFrom picks beyond heavy's nearest
// neighbour other than the mover.
func (s *Sim) splitAnswer(heavy, mover int32) loadbalance.SplitAnswer {
	h := &s.nodes[heavy]
	s.scratch = s.view(h.side).closest(h.pos, s.c.K+1, s.scratch[:0])
	var others []keyspace.Pos
	for _, o := range s.scratch {
		if o != heavy && o != mover {
			others = append(others, s.nodes[o].pos)
		}
	}
	target, _, _, _, ok := loadbalance.SplitFrom(h.pos, s.items(heavy), loadbalance.MinSplitBit(h.pos, others), s.c.SplitSlack)
	return loadbalance.SplitAnswer{OK: ok, Prefix: target.Prefix, Bits: target.Bits}
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
	// The new identity: its writer records (by incarnation, wByGen) are
	// a new writer's.
	mn.gen++
	mn.name = nodeName(m, mn.gen)
	mn.pos = pos
	mn.cache = map[uint64]int64{}
	mn.rv = [2]regionView{}
	mn.wq, mn.flushAt, mn.expiring = nil, 0, false
	mn.born = now
	s.step(m, loadbalance.Event[int32]{Kind: loadbalance.Moved})
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
	s.step(h, loadbalance.Event[int32]{Kind: loadbalance.HandedOver})
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
		r.wTo, r.wToGen, r.wToRun = to, s.nodes[to].gen, s.nodes[to].runs
	}
}

// report is the load node id piggy-backs on its replies
// (loadbalance.ReportDue: reused for a second).
func (s *Sim) report(id int32) loadbalance.Load {
	return first(s.step(id, loadbalance.Event[int32]{Kind: loadbalance.ReportDue})).Load
}

// observe is node id reading the load that node other's reply to it
// carried (balancenet's observe, thesis 4.2.1: a node learns of a hot spot
// from ordinary traffic, not only from its periodic probe): when id's
// controller reacts, id balances with other, as an event of its own so
// that the reply's handling is not disturbed by a move.
func (s *Sim) observe(id, other int32) {
	if !s.c.Balance || s.c.NoPiggyback || id == other || id < 0 {
		return
	}
	n, o := &s.nodes[id], &s.nodes[other]
	if !n.alive || !o.alive || !n.ctl.Listening(s.e.now) {
		return
	}
	a := first(s.step(id, loadbalance.Event[int32]{Kind: loadbalance.Observed, Peer: other, Load: s.report(other)}))
	if a.Kind != loadbalance.AskLoad {
		return
	}
	s.m.reactions++
	s.e.after(0, event{kind: evReact, node: id, gen: n.gen, arg: other, job: int32(o.gen)})
}

// react runs a reaction observe scheduled, if both incarnations are
// still there, and tells the controller it is over.
func (s *Sim) react(ev event) {
	n, o := &s.nodes[ev.node], &s.nodes[ev.arg]
	if s.alive(ev) && o.alive && int32(o.gen) == ev.job {
		s.exchange(ev.node, ev.arg, true)
	}
	if n.alive { // the same controller unless the node crashed and rejoined since
		s.step(ev.node, loadbalance.Event[int32]{Kind: loadbalance.ReactionEnded})
	}
}
