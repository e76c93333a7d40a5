package sim

import (
	"slices"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	replicarule "github.com/up-pool/up/replica"
)

func sortedKeys[V any](m map[int32]V) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// newJob records a job the project creates now.
func (s *Sim) newJob(run, tFinish int64) int32 {
	id := int32(len(s.jobs))
	key := s.jobKey(id)
	s.jobs = append(s.jobs, jobRec{key: key, pos: keyPosOf(key), created: s.e.now, run: run, tFinish: tFinish,
		wKw: -1, wBy: -1, wTo: -1})
	s.m.submitted++
	s.markFaulty(id)
	return id
}

// sendJob has the project send job j to its first node
// (project.firstNode: the nearest it knows of, from its routing table and
// its crawled view, no RPC), crawling the overlay first when the view is
// due (Config.CrawlInterval); that node places it. When every candidate
// is marked dead, the project looks the job up (dht.ClosestPeers, cached)
// and sends it to the closest.
func (s *Sim) sendJob(j int32) {
	if s.crawlDue() {
		s.crawl()
	}
	t := s.jobs[j].pos
	c, gen, ok := s.projectNearest(t)
	lat := int64(0)
	if !ok {
		lat = s.lookup(lkSubmit, s.projCache, s.projPos, 0, t)
		if c = s.view(0).closestOne(t); c < 0 {
			return
		}
		gen = s.nodes[c].gen
	}
	s.e.after(lat+s.latency(), event{kind: evStore, node: c, gen: gen, job: j})
}

// store: the job arrives at the node the project chose, which places it
// on the r closest (pool.Replicate and placement, thesis 3.2.1): the r
// closest in its own routing table (no RPC) when it is among them, else
// the r closest a lookup finds. It keeps a replica if it is one of them,
// and pushes one to each of the others; once every push is answered it
// answers the project with the receipts of the nodes that stored the job
// (submit.go).
func (s *Sim) store(ev event) {
	j := ev.job
	if sub := s.submissionOf(j); !slices.Contains(sub.tried, ev.node) {
		sub.tried = append(sub.tried, ev.node)
	}
	if !s.reach(0, ev.node, ev.gen) {
		// The project's RPC failed: after the time-out it marks the node
		// dead and sends the job through the next of its closest
		// (resubmit).
		s.m.failedStores++
		s.e.after(ms(s.c.RPCTimeout), event{kind: evSubmit, job: j, arg: 3, node: ev.node, gen: ev.gen})
		return
	}
	s.count(ev.node, kJob, s.c.SizeJob)
	id := ev.node
	n := &s.nodes[id]
	call := &storeCall{job: j, first: id, firstGen: n.gen}
	if s.fault[id] == Drop {
		// It acknowledges the project's store, places and keeps nothing,
		// and answers with its own receipt, the only one it can make.
		call.signers = []int32{id}
		s.answer(call, 1)
		return
	}
	t := s.jobs[j].pos
	var buf [8]int32
	view := s.nearestLocal(partyTag(id, n.gen), n.pos, id, n.side, t, s.c.R, buf[:0])
	lat := int64(0)
	if !slices.Contains(view, id) {
		s.m.placeLookups++
		lat = s.lookup(lkSubmit, n.cache, n.pos, n.side, t)
		view = s.view(n.side).closest(t, s.c.R, buf[:0])
	}
	self := slices.Contains(view, id)
	call.self = self
	pushed := false
	tried := append([]int32{id}, view...)
	for _, to := range view {
		if to == id {
			continue
		}
		pushed = pushed || s.reachable(to, s.nodes[to].gen)
		call.pending++
		b := &batch{from: id, fromGen: n.gen, items: []syncItem{{job: j}}, tried: &tried, call: call}
		s.e.after(lat+s.latency(), event{kind: evSync, node: to, gen: s.nodes[to].gen, bat: b, arg: syncPlace})
	}
	if self || !pushed {
		// A node outside the r closest forgets the job once placed; it
		// keeps it if no push can succeed.
		s.putReplica(id, j, job.State{})
	}
	if call.pending == 0 {
		s.answer(call, 1)
	}
}

// putReplica gives node id a replica of job j in state st (or merges st
// into the one it has, job.Receive on its clock). States are kept
// unexpired, as pool keeps them; job.Lapse judges them when read.
func (s *Sim) putReplica(id, j int32, st job.State) {
	n := &s.nodes[id]
	now := s.e.now
	if s.fault[id] == Drop {
		return
	}
	if rep := n.jobs[j]; rep != nil {
		rep.resp = now
		s.setState(id, j, rep, s.receive(id, j, rep.st, st))
		return
	}
	if s.jobs[j].lost {
		return
	}
	n.jobs[j] = &replica{st: st, resp: now}
	if st.Phase < job.Finished {
		n.active++
	}
	s.jobs[j].live++
	s.writerCheck(id, j, s.lapse(id, j, st))
}

// setState changes a replica's state and lets the writer react.
func (s *Sim) setState(id, j int32, rep *replica, st job.State) {
	old := rep.st
	rep.st = st
	n := &s.nodes[id]
	if (old.Phase < job.Finished) != (st.Phase < job.Finished) {
		if st.Phase < job.Finished {
			n.active++
		} else {
			n.active--
		}
	}
	if st.Phase == job.Finished && !s.jobs[j].finished {
		s.jobs[j].finished = true
		s.m.finished++
	}
	if !job.Equal(old, st) {
		s.writerCheck(id, j, s.lapse(id, j, st))
	}
}

func (s *Sim) reachable(id int32, gen uint32) bool {
	return id >= 0 && s.nodes[id].alive && s.nodes[id].gen == gen
}

// sync: a republish batch (or a placement, a pass-on or a hand-on: the
// event's arg, syncKind) arrives; the replica stores what it lacks,
// merges the rest and answers the states where its own is greater. A
// batch that cannot arrive fails at its sender after the time-out
// (syncFailed).
//
// As pool.handleSync and syncWith do, a replica that lacks a job answers
// so and the sender stores it there (one more RPC, the job's size), and a
// replica that becomes finished fetches the result from the sender (one
// RPC at the sender, the result's size). A result's pass-on (arg 2,
// passOn) syncs a replica that lacked the job once more, so it fetches
// the result.
func (s *Sim) sync(ev event) {
	b := ev.bat
	from := s.nodes[b.from].side
	if !s.reach(from, ev.node, ev.gen) {
		if s.reachable(b.from, b.fromGen) {
			s.e.after(ms(s.c.RPCTimeout), event{kind: evSyncFailed, node: b.from, gen: b.fromGen, job: ev.node, arg: ev.arg, bat: b})
		} else if b.call != nil {
			s.pushDone(b.call, 0) // its sender, the first node, is gone
		}
		return
	}
	id := ev.node
	s.hearFrom(b, id)
	if b.call != nil {
		s.placed(b.call, id) // it signs a receipt, a Drop node too
	}
	size := 0
	now := s.e.now
	var back []syncItem
	need, fetch := 0, 0
	for _, it := range b.items {
		if it.st.Phase == job.Ready && len(it.st.Client) == 0 && ev.arg == syncPlace {
			size += s.c.SizeJob
		} else {
			size += s.c.SizeState
		}
		if it.forged {
			// Its proof fails the check every node makes (a fellow
			// forger's too: it cannot pass the state on with a proof).
			if s.fault[id] == Honest {
				s.m.forgedRefused++ // refused, counted, kept as evidence
			}
			continue
		}
		rep := s.nodes[id].jobs[it.job]
		if rep == nil {
			if s.fault[id] == Drop {
				continue
			}
			if ev.arg != syncPlace {
				need++
			} else if r := &s.jobs[it.job]; r.lost {
				// The placing node died with its pushes in flight: they
				// carry the job and land all the same, so it was not lost.
				r.lost = false
				s.m.lost--
			}
			s.putReplica(id, it.job, it.st)
			if rep = s.nodes[id].jobs[it.job]; rep != nil && rep.st.Phase == job.Finished {
				fetch++
			}
			continue
		}
		merged := s.receive(id, it.job, rep.st, it.st)
		if !job.Equal(merged, it.st) {
			back = append(back, syncItem{job: it.job, st: merged})
		}
		rep.resp = now
		if !job.Equal(merged, rep.st) {
			if merged.Phase == job.Finished && rep.st.Phase != job.Finished {
				fetch++
			}
			s.setState(id, it.job, rep, merged)
		}
	}
	s.count(id, kJob, size)
	if need > 0 {
		s.count(id, kJob, need*s.c.SizeJob)
		if ev.arg == syncPassOn {
			s.count(id, kJob, need*s.c.SizeState)
		}
	}
	if fetch > 0 && s.reachable(b.from, b.fromGen) {
		s.count(b.from, kJob, fetch*s.c.SizeResult)
	}
	if len(back) > 0 {
		s.e.after(s.latency(), event{kind: evSyncReply, node: b.from, gen: b.fromGen, bat: &batch{from: id, fromGen: s.nodes[id].gen, items: back}})
	}
	s.handedOn(id, b)
}

// syncReply merges the newer states a replica answered. A job that
// becomes finished here has its result fetched from the replica (one RPC
// there), unless this node is no longer among the job's r closest: it only
// handed its state on (pool's RepublishRound fetches no result for it).
func (s *Sim) syncReply(ev event) {
	if !s.alive(ev) {
		return
	}
	n := &s.nodes[ev.node]
	n.bytes += uint32(len(ev.bat.items) * s.c.SizeState)
	fetch := 0
	for _, it := range ev.bat.items {
		if rep := n.jobs[it.job]; rep != nil {
			m := s.receive(ev.node, it.job, rep.st, it.st)
			if !job.Equal(m, rep.st) {
				if m.Phase == job.Finished && rep.st.Phase != job.Finished && s.amongR(ev.node, it.job) {
					fetch++
				}
				s.setState(ev.node, it.job, rep, m)
			}
		}
	}
	if b := ev.bat; fetch > 0 && s.reachable(b.from, b.fromGen) {
		s.count(b.from, kJob, fetch*s.c.SizeResult)
	}
}

// amongR reports whether node id is among job j's r closest in its view.
func (s *Sim) amongR(id, j int32) bool {
	var buf [8]int32
	return slices.Contains(s.view(s.nodes[id].side).closest(s.jobs[j].pos, s.c.R, buf[:0]), id)
}

// passOn is pool's passOnResult: a node that just stored a job's result
// does at once, for that job, what its next republish round would do,
// rather than up to a round later: the job's closest (in its view) syncs
// the finished state to the others of the r closest, another of the r
// closest syncs it to the closest, and a node no longer among them (the
// job's closest nodes changed since the claim) syncs it to all r. One
// sync RPC per target; a target without the result fetches it (sync). A
// target that fails is marked dead and the pass-on goes to the nodes the
// new view names that it did not try yet (syncFailed), as syncNow does.
// Nodes the client sent the result to itself (sent) are skipped, as
// pool's are (ResultSubmit.Sent).
func (s *Sim) passOn(id, j int32, st job.State, sent []int32) {
	n := &s.nodes[id]
	var buf [8]int32
	to := replicarule.PassOnTargets(id, s.view(n.side).closest(s.jobs[j].pos, s.c.R, buf[:0]))
	to = slices.DeleteFunc(to, func(t int32) bool { return slices.Contains(sent, t) })
	tried := append(append([]int32{id}, to...), sent...)
	for _, t := range to {
		b := &batch{from: id, fromGen: n.gen, items: []syncItem{{job: j, st: st}}, tried: &tried}
		s.e.after(s.latency(), event{kind: evSync, node: t, gen: s.nodes[t].gen, bat: b, arg: syncPassOn})
	}
}

func keyPosOf(key []byte) keyspace.Pos { return keyspace.KeyPos(key) }
