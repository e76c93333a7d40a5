package sim

import (
	"slices"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/job"
	replicarule "github.com/up-pool/up/replica"
)

// The index writer of each node, as indexwriter.Writer runs it: a job's
// closest node keeps its entries what index.Desired wants, by
// index.Reconcile (withdraw what is no longer wanted, place what is
// missing at a random point of the keyword's region, rewrite in place
// every T_rewrite or to reset a quarantine), batched per index node per
// writer tick. The simulator keeps one writer record per job (jobRec's
// w… fields), the latest writer's: a writer that loses the job to a
// newer closest withdraws its entry on its own (takeOver).

// writerCheck is a change of job j's state st at node id (pool's OnChange
// hook): the node's writer looks at the job's entries in its next tick
// when it is the job's closest or has them written.
func (s *Sim) writerCheck(id, j int32, st job.State) {
	if !s.isClosest(id, j) && !s.writes(id, j) {
		return
	}
	r := &s.jobs[j]
	switch st.Phase {
	case job.Claimed:
		r.wClaimed = true
	case job.Finished, job.Collected:
		r.wClaimed = false
	}
	s.enqueue(id, wop{job: j})
}

// enqueue queues job work for node id's next writer tick.
func (s *Sim) enqueue(id int32, op wop) {
	n := &s.nodes[id]
	n.wq = append(n.wq, op)
	if n.flushAt == 0 {
		// Each writer ticks at its own phase, so writers do not flush in
		// lockstep.
		tick := ms(s.c.WriterTick)
		n.flushAt = ((s.e.now-n.phase)/tick+1)*tick + n.phase
		s.e.at(n.flushAt, event{kind: evFlush, node: id, gen: n.gen})
	}
}

// rewriteDue: an entry's T_rewrite passed at its writer.
func (s *Sim) rewriteDue(ev event) {
	if !s.alive(ev) {
		return
	}
	r := &s.jobs[ev.job]
	if r.wBy != ev.node || r.wByGen != ev.gen || r.wNext != ev.at || r.wKw < 0 {
		return
	}
	s.enqueue(ev.node, wop{job: ev.job, due: true})
}

// Flags of an index write or withdrawal in a batch.
const (
	wFinal uint8 = 1 << iota // a withdrawal the job's state calls for (index.RuledOut): whoever wrote the entry
	wReset                   // a write that ends the entry's quarantine (the job came back to ready)
)

// writeBatches are a writer tick's index writes and withdrawals, batched
// per index node in the order first named.
type writeBatches struct {
	from           int32
	fromGen        uint32
	writes, draws  map[int32]*batch
	wOrder, dOrder []int32
	lat            [2]int64 // the region views' latency, per keyword
}

func (wb *writeBatches) put(withdraw bool, to, j int32, pt keyspace.Pos, kw int8, flags uint8) {
	m, order := wb.writes, &wb.wOrder
	if withdraw {
		m, order = wb.draws, &wb.dOrder
	}
	b := m[to]
	if b == nil {
		b = &batch{from: wb.from, fromGen: wb.fromGen}
		m[to] = b
		*order = append(*order, to)
	}
	b.jobs = append(b.jobs, j)
	b.pts = append(b.pts, pt)
	b.kws = append(b.kws, kw)
	b.flags = append(b.flags, flags)
}

// flush is a writer tick: each queued job's entries are made what
// index.Reconcile says (writeJob), writes and withdrawals batched per
// index node.
func (s *Sim) flush(id int32) {
	n := &s.nodes[id]
	due := map[int32]bool{}
	for _, op := range n.wq {
		due[op.job] = due[op.job] || op.due
	}
	n.wq, n.flushAt = nil, 0
	wb := &writeBatches{from: id, fromGen: n.gen, writes: map[int32]*batch{}, draws: map[int32]*batch{}}
	for _, j := range sortedKeys(due) {
		s.writeJob(id, j, due[j], wb)
	}
	d := max(wb.lat[0], wb.lat[1])
	for _, to := range wb.wOrder {
		s.e.after(d+s.latency(), event{kind: evIndexWrite, node: to, gen: s.nodes[to].gen, bat: wb.writes[to]})
	}
	for _, to := range wb.dOrder {
		s.e.after(s.latency(), event{kind: evIndexWithdraw, node: to, gen: s.nodes[to].gen, bat: wb.draws[to]})
	}
}

// writes reports whether node id, up, has job j's entry written: it
// wrote the job's record, and the index node still answers and has not
// restarted since (indexwriter forgets the entries at nodes that fail a
// probe, dropDeadTargets, every tick: a restart, its table lost, is down
// for many ticks).
func (s *Sim) writes(id, j int32) bool {
	r := &s.jobs[j]
	return r.wKw >= 0 && r.wBy == id && s.reachable(id, r.wByGen) && s.reachable(r.wTo, r.wToGen) && s.nodes[r.wTo].runs == r.wToRun
}

// listingHeld is pool.ListingHeld: node id handed job j on to a newer
// closest less than replica.HandOnGraceMS ago, so it keeps listing the job.
func (s *Sim) listingHeld(id, j int32) bool {
	at, ok := s.nodes[id].handed[j]
	return ok && s.e.now-at < replicarule.HandOnGraceMS
}

// writeJob is indexwriter's planJob for job j at node id: the keywords it
// has the job written under (writes), those index.Desired wants (it
// lists the job as its closest, or while its listing is held), and
// index.Reconcile's verdict: withdraw, place anew in a random point of
// the keyword's region, rewrite in place (due, or reset after a claim),
// reschedule the next rewrite.
func (s *Sim) writeJob(id, j int32, due bool, wb *writeBatches) {
	n := &s.nodes[id]
	r := &s.jobs[j]
	now := s.e.now
	rep := n.jobs[j]
	mine := s.writes(id, j)
	var written, want []string
	if mine {
		written = []string{s.kwName(r.wKw)}
	} else if r.wBy == id {
		r.wKw = -1 // its index node is gone
	}
	var st job.State
	if rep != nil {
		st = job.Expire(rep.st, now)
		closest := index.Lists(s.isClosest(id, j), false, s.listingHeld(id, j), mine) // no backup listers in the sim
		want = index.Desired(closest, st, s.listing, s.c.Keyword)
	}
	reset := st.Phase == job.Ready && r.wClaimed
	if st.Phase == job.Ready {
		r.wClaimed = false
	}
	rc := index.Reconcile(written, want, due, reset)
	if rep != nil && !mine && len(want) == 0 && st.Phase != job.Ready && s.isClosest(id, j) {
		s.sweepOrphans(id, j, st, wb)
	}
	for _, kw := range rc.Withdraw {
		final := index.RuledOut(st, kw, s.c.Keyword)
		wb.put(true, r.wTo, j, r.wPt, kwNum(s, kw), finalFlag(final))
		r.wKw = -1
		if final && st.Phase != job.Ready {
			r.swept = sweepMark{by: id, run: n.runs, phase: st.Phase, start: st.Start}
		}
	}
	for _, kw := range rc.Place {
		k := kwNum(s, kw)
		// The job's point of the region, the same for every writer
		// (indexclient.Regions.EntryPoint).
		ept := index.EntryPoint(s.kwRegion(k), kw, r.key)
		pt, to, l := s.regionTarget(lkWrite, &n.rv[k], n.cache, n.pos, n.side, s.kwRegion(k), &ept)
		wb.lat[k] = max(wb.lat[k], l)
		s.takeOver(id, j)
		r.wKw, r.wTo, r.wToGen, r.wToRun, r.wPt, r.wBy, r.wByGen = k, to, s.nodes[to].gen, s.nodes[to].runs, pt, id, n.gen
		wb.put(false, to, j, pt, k, resetFlag(reset))
	}
	for range rc.Rewrite {
		wb.put(false, r.wTo, j, r.wPt, r.wKw, resetFlag(reset))
	}
	if len(rc.Place)+len(rc.Rewrite) > 0 {
		s.scratch = s.view(n.side).closest(r.pos, s.c.R+2, s.scratch[:0])
		r.view = r.view[:0]
		for _, v := range s.scratch {
			r.view = append(r.view, s.nodes[v].name)
		}
	}
	if rc.Reschedule && !rc.Forget {
		r.wNext = now + s.e.uniform(ms(s.c.RewriteMin), ms(s.c.RewriteMax))
		s.e.at(r.wNext, event{kind: evRewrite, node: id, gen: n.gen, job: j})
	}
}

func kwNum(s *Sim, kw string) int8 {
	if kw == s.kwFin {
		return 1
	}
	return 0
}

func finalFlag(final bool) uint8 {
	if final {
		return wFinal
	}
	return 0
}

func resetFlag(reset bool) uint8 {
	if reset {
		return wReset
	}
	return 0
}

// takeOver: node id places job j's entry anew while another live node has
// it written (id became the job's closest: a join, a move, a hand-on).
// That writer, no longer the closest, withdraws its entry by
// index.Reconcile at its first writer tick past its listing's grace
// (pool.ListingHeld), in a batch of its own; the sim keeps one writer
// record per job, the new one.
func (s *Sim) takeOver(id, j int32) {
	r := &s.jobs[j]
	y := r.wBy
	if y == id || y < 0 || !s.writes(y, j) {
		return
	}
	yn := &s.nodes[y]
	at := s.e.now
	if h, ok := yn.handed[j]; ok {
		at = max(at, h+replicarule.HandOnGraceMS)
	}
	tick := ms(s.c.WriterTick)
	at = ((at-yn.phase)/tick+1)*tick + yn.phase
	var st job.State
	if rep := yn.jobs[j]; rep != nil {
		st = job.Expire(rep.st, at)
	}
	kw := s.kwName(r.wKw)
	rc := index.Reconcile([]string{kw}, index.Desired(false, st, s.listing, s.c.Keyword), false, false)
	if len(rc.Withdraw) == 0 {
		return
	}
	b := &batch{from: y, fromGen: yn.gen, jobs: []int32{j}, pts: []keyspace.Pos{r.wPt}, kws: []int8{r.wKw},
		flags: []uint8{finalFlag(index.RuledOut(st, kw, s.c.Keyword))}}
	s.e.at(at+s.latency(), event{kind: evIndexWithdraw, node: r.wTo, gen: r.wToGen, bat: b})
}

// listedBy returns the jobs whose entries node id, about to crash, lists
// as their closest, and the jobs whose entries it holds as an index node.
func (s *Sim) listedBy(id int32) (listed []int32) {
	n := &s.nodes[id]
	for _, j := range sortedKeys(n.jobs) {
		if s.writes(id, j) {
			listed = append(listed, j)
		}
	}
	if n.idx != nil {
		var held []int32
		n.idx.Each(s.e.now, func(e index.Entry) bool {
			held = append(held, jobID(e.Job))
			return true
		})
		slices.Sort(held) // Each's order is a map's: the run must replay
		listed = append(listed, slices.Compact(held)...)
	}
	return listed
}

// takeOverDead: node id crashed, and with it the entries it wrote and
// those it held. Within a writer tick, as indexwriter's full round (its
// rank probe and dropDeadTargets) does, each job's closest looks at its
// entries again: the new closest places what the dead writer listed, a
// writer whose index node died places its entry anew.
func (s *Sim) takeOverDead(id int32, listed []int32) {
	for _, j := range listed {
		r := &s.jobs[j]
		w := s.view(s.nodes[id].side).closestOne(r.pos)
		if r.wTo == id && s.reachable(r.wBy, r.wByGen) {
			w = r.wBy
		}
		if w >= 0 && s.nodes[w].jobs[j] != nil {
			s.enqueue(w, wop{job: j})
		}
	}
}

// sweepMark is the state of a job when node by (in its run run) withdrew
// its entries at their points (indexwriter's swept set).
type sweepMark struct {
	by    int32
	run   uint32
	phase job.Phase
	start int64
}

// sweepOrphans is indexwriter's sweepOrphans: node id, job j's closest,
// holds it in a state listed nowhere and wrote none of its entries (it
// took the listing over, or restarted), so it sends a final withdrawal to
// each ruled-out keyword's entry point, once per state and run.
func (s *Sim) sweepOrphans(id, j int32, st job.State, wb *writeBatches) {
	n := &s.nodes[id]
	r := &s.jobs[j]
	m := sweepMark{by: id, run: n.runs, phase: st.Phase, start: st.Start}
	if r.swept == m {
		return
	}
	r.swept = m
	for k := int8(0); k <= 1; k++ {
		kw := s.kwName(k)
		if !index.RuledOut(st, kw, s.c.Keyword) {
			continue
		}
		ept := index.EntryPoint(s.kwRegion(k), kw, r.key)
		pt, to, l := s.regionTarget(lkWrite, &n.rv[k], n.cache, n.pos, n.side, s.kwRegion(k), &ept)
		wb.lat[k] = max(wb.lat[k], l)
		if to >= 0 {
			wb.put(true, to, j, pt, k, wFinal)
		}
	}
}
