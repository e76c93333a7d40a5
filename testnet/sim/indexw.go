package sim

import (
	"slices"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/job"
)

// The index side of the simulator: region views (indexclient.Regions), index
// nodes holding index.Tables, and the project's harvest of the finished
// keyword's region. The writers that keep the entries are in writer.go.

func (s *Sim) kwName(kw int8) string {
	if kw == 1 {
		return s.kwFin
	}
	return s.c.Keyword
}

func (s *Sim) kwRegion(kw int8) keyspace.Region {
	if kw == 1 {
		return s.regionFin
	}
	return s.region
}

// regionView is a party's cached view of a keyword's region
// (indexclient.Regions, whose decisions are index.RegionViews): fetched
// with a walk of near questions to a random point of the region
// (dht.Walk; walkCost), kept for Config.RegionTTL (5 min). It is crowded
// when the region holds index.NearLimit nodes or more (the answers all
// lie inside it): a target point then costs a near question unless it
// lies in a sub-region an earlier answer showed in full (index.Coverage;
// at most index.MaxCovered are kept, index.AddCovered). It keeps no
// peers: the simulator sends to the true closest node and counts a target
// whose node is younger than the view as stale, so it shares the
// machine's rules, not the machine (stepping index.RegionViews would
// keep up to 20 + 64·20 peers per party and keyword and send to the
// view's closest, changing what the simulator measures).
type regionView struct {
	at      int64 // ms it was fetched
	until   int64 // ms; 0: not fetched
	crowded bool
	covered []keyspace.Region
}

// near charges a near question (/up/near) to node id.
func (s *Sim) near(why lookupWhy, id int32) {
	if id < 0 {
		return
	}
	s.count(id, kLookup, s.c.SizeLookup)
	s.m.lookupRPC[why]++
	s.m.nearRPC[why]++
}

// cover adds to rv the sub-region around x that a near answer at x (the
// index.NearLimit nodes nearest x) shows in full, by the rule and bound
// indexclient's views use (index.Coverage, index.AddCovered).
func (s *Sim) cover(rv *regionView, side int8, x keyspace.Pos) {
	s.scratch2 = s.view(side).closest(x, index.NearLimit, s.scratch2[:0])
	answer := s.scratchPeers[:0]
	for _, id := range s.scratch2 {
		answer = append(answer, index.Peer{Pos: s.nodes[id].pos})
	}
	s.scratchPeers = answer
	if sub, ok := index.Coverage(x, answer, index.NearLimit); ok {
		rv.covered = index.AddCovered(rv.covered, sub)
	}
}

// regionTarget is indexclient.Regions.Target for a party at position from
// with region view rv and lookup cache cache: it fetches the view when
// absent or older than Config.RegionTTL (a walk to a random point of the
// region), draws a random point of region g (or takes at, an entry's
// point: indexclient.Regions.EntryPoint), refines a
// crowded view with a near question when the point lies in no sub-region
// known in full, and returns the point, the node closest to it and the
// latency in ms. The node is the true closest; when it joined or moved
// after the view was fetched and no near question was asked now, the real
// view would not know it: counted as a stale target.
func (s *Sim) regionTarget(why lookupWhy, rv *regionView, cache map[uint64]int64, from keyspace.Pos, side int8, g keyspace.Region, at *keyspace.Pos) (keyspace.Pos, int32, int64) {
	v := s.view(side)
	now := s.e.now
	lat := int64(0)
	fresh := now >= rv.until || rv.until == 0
	if fresh {
		// indexnet's view: a walk to a random point of the region, whose
		// last question is the near question there.
		x := g.RandomPoint(s.e.rng)
		lat = s.walkCost(why, from, side, x)
		rv.at, rv.until = now, now+ms(s.c.RegionTTL)
		rv.covered = rv.covered[:0]
		a, b := v.span(g)
		if rv.crowded = b-a >= index.NearLimit; rv.crowded {
			s.cover(rv, side, x)
		}
	}
	var pt keyspace.Pos
	if at != nil {
		pt = *at
	} else {
		pt = g.RandomPoint(s.e.rng)
	}
	to := v.closestOne(pt)
	s.m.regionTargets++
	if rv.crowded && !(index.RegionView{Covered: rv.covered}).Covers(pt) {
		s.near(why, to)
		lat += s.rtt()
		s.cover(rv, side, pt)
	} else if !fresh && to >= 0 && s.nodes[to].born > rv.at {
		s.m.staleTargets++
	}
	return pt, to, lat
}

// table returns node id's index table, creating it.
func (s *Sim) table(id int32) *index.Table {
	n := &s.nodes[id]
	if n.idx == nil {
		n.idx = index.NewTable(index.Config{Expiry: ms(s.c.IndexExpiry), Quarantine: ms(s.c.Quarantine)})
	}
	if !n.expiring {
		n.expiring = true
		s.e.after(60_000, event{kind: evIndexExpire, node: id, gen: n.gen})
	}
	return n.idx
}

func (s *Sim) entry(j int32, kw int8, pt keyspace.Pos, writer string) index.Entry {
	r := &s.jobs[j]
	kws := s.listing
	if kw == 1 {
		kws = s.finListing
	}
	return index.Entry{Keyword: s.kwName(kw), Job: r.key, Project: s.c.Keyword, Created: r.created,
		Keywords: kws, Point: pt, Writer: writer}
}

// indexWrite: a writer's batch arrives. An entry whose point another node
// is now closer to is redirected there (the writer follows, one more RPC);
// a batch to a node that is gone makes the writer place its entries anew.
func (s *Sim) indexWrite(ev event) {
	b := ev.bat
	w := &s.nodes[b.from]
	if !s.reach(w.side, ev.node, ev.gen) {
		if w.alive && w.gen == b.fromGen {
			for _, j := range b.jobs {
				if r := &s.jobs[j]; r.wTo == ev.node && r.wBy == b.from && r.wByGen == b.fromGen {
					r.wKw = -1
					s.enqueue(b.from, wop{job: j})
				}
			}
		}
		return
	}
	s.count(ev.node, kIndex, len(b.jobs)*s.c.SizeEntry)
	now := s.e.now
	v := s.view(s.nodes[ev.node].side)
	for i, j := range b.jobs {
		to := ev.node
		if c := v.closestOne(b.pts[i]); c != to {
			s.count(c, kIndex, s.c.SizeEntry)
			to = c
		}
		r := &s.jobs[j]
		if r.wKw == b.kws[i] && r.wTo == ev.node && r.wBy == b.from && r.wByGen == b.fromGen {
			r.wTo, r.wToGen, r.wToRun = to, s.nodes[to].gen, s.nodes[to].runs
		}
		t := s.table(to)
		t.Put(s.entry(j, b.kws[i], b.pts[i], nodeName(b.from, b.fromGen)), now)
		if b.flags[i]&wReset != 0 {
			t.Unquarantine(s.kwName(b.kws[i]), r.key)
		}
	}
	if w.alive && w.gen == b.fromGen {
		s.hear(b.from, ev.node)
		s.observe(b.from, ev.node)
	}
}

// indexWithdraw: a writer's withdrawals arrive: one its job's state calls
// for (wFinal) removes the entry whoever wrote it, another only the
// writer's own (indexnet's Withdraw).
func (s *Sim) indexWithdraw(ev event) {
	b := ev.bat
	if !s.reach(s.nodes[b.from].side, ev.node, ev.gen) {
		return
	}
	s.count(ev.node, kIndex, len(b.jobs)*s.c.SizeHeader)
	n := &s.nodes[ev.node]
	if n.idx == nil {
		return
	}
	by := nodeName(b.from, b.fromGen) // an entry another writer took over stays
	for i, j := range b.jobs {
		if b.flags[i]&wFinal != 0 {
			n.idx.Withdraw(s.kwName(b.kws[i]), s.jobs[j].key, "", s.e.now)
		} else {
			n.idx.Withdraw(s.kwName(b.kws[i]), s.jobs[j].key, by, s.e.now)
		}
	}
	if w := &s.nodes[b.from]; w.alive && w.gen == b.fromGen {
		s.observe(b.from, ev.node)
	}
}

// indexExpire drops an index node's entries not rewritten in time.
func (s *Sim) indexExpire(ev event) {
	if !s.alive(ev) {
		return
	}
	n := &s.nodes[ev.node]
	if n.idx != nil {
		n.idx.Expire(s.e.now)
	}
	if n.idx == nil || n.idx.Len() == 0 {
		n.expiring = false
		n.idx = nil
		return
	}
	s.e.after(60_000, ev)
}

// harvest is the project's round: it walks the finished keyword's region
// (every node inside it and the index.WalkOutside nearest outside it, as
// index.Walk keeps them; the sim took the k = 20 nearest its first
// point, 16 outside at 64 nodes and none at 1,024), pages the finished
// entries, fetches each result from a replica, records it and tells the
// job's nodes it is collected (thesis 3.2.3, 4.2.1).
func (s *Sim) harvest() {
	now := s.e.now
	s.e.after(ms(s.c.HarvestEvery), event{kind: evHarvest})
	// project.Harvest walks the finished region anew each time
	// (indexclient's walk: near questions toward it, no lookup).
	lat := s.walkCost(lkHarvest, s.projPos, 0, s.regionFin.Prefix)
	v := s.view(0)
	a, b := v.span(s.regionFin)
	// The nodes nearest the region's first point are those inside it,
	// then the nearest outside.
	visit := v.closest(s.regionFin.Prefix, b-a+index.WalkOutside, nil)
	slices.Sort(visit)
	visit = slices.Compact(visit)
	left := s.c.HarvestMax
	for _, id := range visit {
		if left == 0 {
			break
		}
		n := &s.nodes[id]
		if n.idx == nil {
			s.count(id, kIndex, 0)
			continue
		}
		es, _ := n.idx.Page(s.qFin, s.kwFin, nil, left, now)
		s.count(id, kIndex, len(es)*s.c.SizeEntry)
		for _, e := range es {
			j := jobID(e.Job)
			r := &s.jobs[j]
			if r.collected {
				continue
			}
			// Fetch from the replicas the entry names, in turn (one RPC
			// each until one has the result); only an entry naming none
			// makes the project look the job up (project.fetchResult). A
			// job none of whose named replicas has it waits for the
			// writer's next rewrite to name its current nodes.
			var nodes []int32
			for _, name := range r.view {
				if id, gen := parseName(name); s.reachable(id, gen) && s.nodes[id].side == 0 {
					nodes = append(nodes, id)
				}
			}
			jl := int64(0)
			if len(r.view) == 0 {
				jl = s.lookup(lkHarvest, s.projCache, s.projPos, 0, r.pos)
				nodes = v.closest(r.pos, s.c.R, nil)
			}
			from := s.finishedAt(j, nodes)
			for _, id := range nodes {
				if id == from {
					break
				}
				s.count(id, kJob, 0)
			}
			if from < 0 {
				continue
			}
			s.count(from, kJob, s.c.SizeResult)
			r.collected, r.collectedAt = true, now
			s.m.collected++
			left--
			for _, id := range nodes[:min(len(nodes), s.c.R)] {
				s.e.after(lat+jl+s.rtt()+s.latency(), event{kind: evCollected, node: id, gen: s.nodes[id].gen, job: j})
			}
			if left == 0 {
				break
			}
		}
	}
}

// collectedAt: the project's collected notice arrives at a replica.
func (s *Sim) collectedAt(ev event) {
	if !s.reach(0, ev.node, ev.gen) {
		return
	}
	s.count(ev.node, kJob, s.c.SizeState)
	rep := s.nodes[ev.node].jobs[ev.job]
	if rep == nil {
		return
	}
	st := job.State{Phase: job.Collected, At: s.jobs[ev.job].collectedAt}
	if m := s.receive(ev.node, ev.job, rep.st, st); !job.Equal(m, rep.st) {
		s.setState(ev.node, ev.job, rep, m)
	}
}

// finishedAt is the first of nodes holding job j's result, or -1.
func (s *Sim) finishedAt(j int32, nodes []int32) int32 {
	for _, id := range nodes {
		if rep := s.nodes[id].jobs[j]; rep != nil && rep.st.Phase == job.Finished && s.fault[id] != Withhold {
			return id
		}
	}
	return -1
}
