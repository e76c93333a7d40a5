package sim

import (
	"cmp"
	"slices"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	replicarule "github.com/up-pool/up/replica"
)

// The replica side of a node's rounds, stepped by the nodes' own rules
// (package replica, imported as replicarule): a republish round is
// planned by replica.PlanRound, a sync that fails is re-planned by
// replica.Replan, and a newcomer is handed its jobs by replica.HandOnTo.

// A sync's kind, the arg of its evSync and evSyncFailed events.
const (
	syncRound  int32 = iota // a republish round's batch (republish)
	syncPlace               // the placing node's push of a new job (store)
	syncPassOn              // a result's pass-on (passOn)
	syncHandOn              // a hand-on to a newcomer (handOn)
	syncRepair              // a resync on a client's repair request (resync), or a departure's repair (repair)
)

// republish is a node's two-way republish round (thesis 3.2.4, 4.2.1),
// planned by replica.PlanRound as pool.RepublishRound plans it: the
// closest of a job's r syncs the others, the others sync the closest,
// replicas no longer among the r closest hand their state on to the
// closest (it may be newer) and, past the replica expiry, are dropped
// once handed on (handedOn); collected jobs are deleted after T_collect
// (pool.ExpireNow). The views are the live ring: the node's probe before
// its plan. Items are batched per peer: one RPC each. again schedules the
// node's next round (false: a restarted node's catch-up, pool.CatchUp).
func (s *Sim) republish(id int32, again bool) {
	n := &s.nodes[id]
	now := s.e.now
	jobs, items := s.roundJobs(id)
	s.probeRound(id, jobs)
	pl := replicarule.PlanRound(id, jobs, now, ms(s.c.ReplicaExpiry))
	for _, k := range pl.Responsible {
		n.jobs[items[k].job].resp = now
	}
	for k := range pl.Replicas {
		// The closest (re)writes its listing (indexwriter's full round).
		j := items[k].job
		s.writerCheck(id, j, s.lapse(id, j, n.jobs[j].st))
	}
	for _, k := range pl.Drop {
		it := items[k]
		it.drop = true
		items[k] = it
	}
	skip := s.roundSkips(id, jobs, items, pl.Handed)
	plan := map[int32][]syncItem{}
	order := syncOrder(jobs, pl.Sync)
	for _, t := range order {
		for _, k := range pl.Sync[t] {
			if skip[k] {
				continue
			}
			it := items[k]
			it.handed = pl.Handed[k]
			plan[t] = append(plan[t], it)
		}
	}
	if s.fault[id] == Forge {
		s.forgeRound(id, func(t int32, it syncItem) {
			if _, ok := plan[t]; !ok {
				order = append(order, t)
			}
			plan[t] = append(plan[t], it)
		})
	}
	for _, t := range order {
		if len(plan[t]) == 0 {
			continue // every job for t skipped
		}
		b := &batch{from: id, fromGen: n.gen, items: plan[t]}
		s.e.after(s.latency(), event{kind: evSync, node: t, gen: s.nodes[t].gen, bat: b})
	}
	if again {
		s.e.after(s.e.uniform(ms(s.c.RepublishMin), ms(s.c.RepublishMax)), event{kind: evRepublish, node: id, gen: n.gen})
	}
}

// roundJobs is what node id's round plans over: each held job, in job
// order, with its r nearest live nodes, and the item each would send (its
// state unexpired: each receiver judges a lapse on its own clock), by
// key. On the way it lets the writer follow claims that lapsed on the
// node's clock and deletes collected jobs kept for T_collect.
func (s *Sim) roundJobs(id int32) ([]replicarule.RoundJob[int32], map[string]syncItem) {
	n := &s.nodes[id]
	v := s.view(n.side)
	jobs := make([]replicarule.RoundJob[int32], 0, len(n.jobs))
	items := make(map[string]syncItem, len(n.jobs))
	for _, j := range sortedKeys(n.jobs) {
		rep := n.jobs[j]
		st := s.lapse(id, j, rep.st)
		if !job.Equal(st, rep.lapsed) {
			// A claim lapsed on this node's clock: its listing follows.
			rep.lapsed = st
			s.writerCheck(id, j, st)
		}
		if st.Phase == job.Collected && s.nowAt(id)-st.At >= ms(s.c.TCollect) {
			s.dropReplica(id, j)
			continue
		}
		k := string(s.jobs[j].key)
		jobs = append(jobs, replicarule.RoundJob[int32]{
			Holding: replicarule.Holding{Key: k, State: st, Responsible: rep.resp},
			View:    v.closest(s.jobs[j].pos, s.c.R, nil),
		})
		items[k] = syncItem{job: j, st: rep.st}
	}
	return jobs, items
}

// syncOrder returns a plan's targets in the order the round's jobs first
// name them (job order, then view order), so a round sends (and draws its
// latencies) in an order that does not depend on map iteration.
func syncOrder(jobs []replicarule.RoundJob[int32], sync map[int32][]string) []int32 {
	first := make(map[string]int, len(jobs))
	for i, j := range jobs {
		first[j.Key] = i
	}
	type at struct{ t, job, pos int32 }
	ats := make([]at, 0, len(sync))
	for t, keys := range sync {
		i := first[keys[0]]
		ats = append(ats, at{t, int32(i), int32(slices.Index(jobs[i].View, t))})
	}
	slices.SortFunc(ats, func(a, b at) int {
		return cmp.Or(cmp.Compare(a.job, b.job), cmp.Compare(a.pos, b.pos))
	})
	out := make([]int32, len(ats))
	for i, a := range ats {
		out[i] = a.t
	}
	return out
}

// syncFailed: a sync to node ev.job did not arrive, and the sender's
// time-out ran out. The sender marks the target dead (its next views
// leave it out: the ring already does once it is gone) and re-plans, as
// the node does, at most replica.SyncAttempts times in all: a round's
// items by replica.Replan on the job's new view; a pass-on or a placement
// to the nodes its new view names that it did not try yet. A forger's
// lies are not re-sent. A placement's re-planned pushes answer the
// project's store as the first did (submit.go).
func (s *Sim) syncFailed(ev event) {
	s.m.failedSyncs++
	if ev.arg == syncRound && s.nodes[ev.node].gen == ev.gen {
		s.unmarkSynced(ev.node, ev.bat.items)
	}
	if !s.alive(ev) || int(ev.bat.attempt)+1 >= replicarule.SyncAttempts {
		if ev.bat.call != nil {
			s.pushDone(ev.bat.call, 1)
		}
		return
	}
	id, failed, b := ev.node, ev.job, ev.bat
	next := map[int32][]syncItem{}
	var order []int32
	for _, it := range b.items {
		if it.forged {
			continue
		}
		view := s.viewWithout(id, s.jobs[it.job].pos, failed)
		var to []int32
		switch ev.arg {
		case syncRound:
			to = replicarule.Replan(id, failed, view, it.handed)
		case syncPassOn:
			to = s.untried(b.tried, replicarule.PassOnTargets(id, view))
		case syncPlace:
			to = s.untried(b.tried, view)
		}
		for _, t := range to {
			if _, ok := next[t]; !ok {
				order = append(order, t)
			}
			next[t] = append(next[t], it)
		}
	}
	n := &s.nodes[id]
	for _, t := range order {
		nb := &batch{from: id, fromGen: n.gen, items: next[t], attempt: b.attempt + 1, tried: b.tried, call: b.call}
		if b.call != nil {
			b.call.pending++
		}
		s.e.after(s.latency(), event{kind: evSync, node: t, gen: s.nodes[t].gen, bat: nb, arg: ev.arg})
	}
	if b.call != nil {
		s.pushDone(b.call, 1) // the push that failed
	}
}

// viewWithout is the r nearest live nodes to pos in node id's view,
// closest first, without failed (a node marked dead, though a lost
// message leaves it on the ring).
func (s *Sim) viewWithout(id int32, pos keyspace.Pos, failed int32) []int32 {
	view := s.view(s.nodes[id].side).closest(pos, s.c.R+1, nil)
	view = slices.DeleteFunc(view, func(v int32) bool { return v == failed })
	return view[:min(len(view), s.c.R)]
}

// untried returns those of to not in tried, and adds them to it.
func (s *Sim) untried(tried *[]int32, to []int32) []int32 {
	var out []int32
	for _, t := range to {
		if !slices.Contains(*tried, t) {
			*tried = append(*tried, t)
			out = append(out, t)
		}
	}
	return out
}

// handedOn is pool.handedOn at the sender of batch b, which just arrived
// at node t: a lingering copy the round drops goes once its state went to
// the job's closest in a sync that succeeded and, when the sender holds
// the job's result, t now serves it (one result fetch at t checks).
// Otherwise it stays for the next round.
func (s *Sim) handedOn(t int32, b *batch) {
	if !s.reachable(b.from, b.fromGen) {
		return
	}
	from := &s.nodes[b.from]
	checked := 0
	for _, it := range b.items {
		rep := from.jobs[it.job]
		if !it.drop || rep == nil {
			continue
		}
		if rep.st.Phase == job.Finished && s.fault[b.from] != Withhold {
			checked++
			if h := s.nodes[t].jobs[it.job]; h == nil || h.st.Phase < job.Finished || s.fault[t] == Withhold {
				continue
			}
		}
		s.dropReplica(b.from, it.job)
	}
	if checked > 0 {
		s.count(t, kJob, checked*s.c.SizeResult)
	}
}

// handOnSoon schedules the hand-on to newcomer x (a join or a move) at
// the nodes that may hold jobs whose r closest it entered: the previous
// closest of such a job is among the r nodes nearest x (XOR is an
// ultrametric: the ball around the job holding both is the ball around
// x). The overlay's first nodes, joining at time 0, hold nothing.
func (s *Sim) handOnSoon(x int32) {
	n := &s.nodes[x]
	if s.e.now == 0 {
		return
	}
	var buf [9]int32
	for _, y := range s.view(n.side).closest(n.pos, s.c.R+1, buf[:0]) {
		if y != x && len(s.nodes[y].jobs) > 0 {
			s.e.after(replicarule.HandOnGatherMS, event{kind: evHandOn, node: y, gen: s.nodes[y].gen, job: x, arg: int32(n.gen)})
		}
	}
}

// handOn is pool.HandOnNow at node ev.node for newcomer ev.job: each
// held job replica.HandOnTo hands on to it (this node was its closest
// before the newcomer and the newcomer is now among its r closest) goes
// in one sync batch; the newcomer stores what it lacks. A failed hand-on
// is not re-planned: the republish round places the jobs.
func (s *Sim) handOn(ev event) {
	x, xgen := ev.job, uint32(ev.arg)
	if !s.alive(ev) || !s.reachable(x, xgen) {
		return
	}
	id := ev.node
	n := &s.nodes[id]
	v := s.view(n.side)
	known := v.len() - 2 // the routing table before the newcomer, without itself
	newcomer := []int32{x}
	var items []syncItem
	var buf [9]int32
	for _, j := range sortedKeys(n.jobs) {
		view := v.closest(s.jobs[j].pos, s.c.R+1, buf[:0])
		if len(replicarule.HandOnTo(id, newcomer, view, known, s.c.R)) > 0 {
			items = append(items, syncItem{job: j, st: n.jobs[j].st})
		}
	}
	if len(items) == 0 {
		return
	}
	// It keeps listing them for a grace (pool.ListingHeld), so the
	// newcomer's listing is up first.
	now := s.e.now
	for j, at := range n.handed {
		if now-at >= replicarule.HandOnGraceMS {
			delete(n.handed, j)
		}
	}
	if n.handed == nil {
		n.handed = map[int32]int64{}
	}
	for _, it := range items {
		n.handed[it.job] = now
	}
	s.m.handOnJobs += len(items)
	b := &batch{from: id, fromGen: n.gen, items: items}
	s.e.after(s.latency(), event{kind: evSync, node: x, gen: xgen, bat: b, arg: syncHandOn})
}

// resync is pool.Resync at node id for job j, on a client's repair
// request (a release that says nodes among the job's closest lack it):
// one sync of the job's state to each other node of its r closest in the
// node's view, which stores the job where it is missing; at most once per
// replica.ResyncIntervalMS per job. A failed sync is not re-planned.
func (s *Sim) resync(id, j int32) {
	n := &s.nodes[id]
	rep := n.jobs[j]
	if rep == nil {
		return
	}
	now := s.e.now
	if at, ok := n.resynced[j]; ok && now-at < replicarule.ResyncIntervalMS {
		return
	}
	if n.resynced == nil {
		n.resynced = map[int32]int64{}
	}
	n.resynced[j] = now
	s.m.resyncs++
	for _, t := range s.view(n.side).closest(s.jobs[j].pos, s.c.R, nil) {
		if t == id {
			continue
		}
		b := &batch{from: id, fromGen: n.gen, items: []syncItem{{job: j, st: rep.st}}}
		s.e.after(s.latency(), event{kind: evSync, node: t, gen: s.nodes[t].gen, bat: b, arg: syncRepair})
	}
}
