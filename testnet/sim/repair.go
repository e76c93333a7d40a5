package sim

import (
	"github.com/up-pool/up/dht/keyspace"
	replicarule "github.com/up-pool/up/replica"
)

// repairSoon schedules, after replica.RepairGatherMS, a repair at each
// node that may now be the closest live node of a job whose r closest
// node x was among: such a node is among the r live nodes nearest x (XOR
// is an ultrametric: the ball around the job that held x is the ball
// around x). The simulator's views learn of a departure at once, as a
// mocknet node's neighbours do when its connections close (pool's repair
// on departure, from kad-dht's routing-table removal).
func (s *Sim) repairSoon(x int32) {
	n := &s.nodes[x]
	var buf [9]int32
	for _, y := range s.view(n.side).closest(n.pos, s.c.R, buf[:0]) {
		if y != x && len(s.nodes[y].jobs) > 0 {
			s.e.after(replicarule.RepairGatherMS, event{kind: evRepair, node: y, gen: s.nodes[y].gen, job: x})
		}
	}
}

// repair is pool.RepairNow at node ev.node for the departed node ev.job:
// each held job replica.RepairTo gives on (x was among its r closest and
// this node is now its closest live one) goes in one sync batch to each
// node that entered the job's r closest in x's place; a target stores
// what it lacks. A departed node that is back is no longer gone. A failed
// repair is not re-planned: the republish round places the job.
func (s *Sim) repair(ev event) {
	x := ev.job
	if !s.alive(ev) || s.nodes[x].alive {
		return
	}
	id := ev.node
	n := &s.nodes[id]
	v := s.view(n.side)
	gone, xpos := []int32{x}, s.nodes[x].pos
	plan := map[int32][]syncItem{}
	var order []int32
	var buf [10]int32
	for _, j := range sortedKeys(n.jobs) {
		pos := s.jobs[j].pos
		view := withDeparted(v.closest(pos, s.c.R+1, buf[:0]), x, xpos, pos, s.nodes)
		for _, t := range replicarule.RepairTo(id, gone, view, s.c.R) {
			if _, ok := plan[t]; !ok {
				order = append(order, t)
			}
			plan[t] = append(plan[t], syncItem{job: j, st: n.jobs[j].st})
		}
	}
	for _, t := range order {
		s.m.repairJobs += len(plan[t])
		b := &batch{from: id, fromGen: n.gen, items: plan[t]}
		s.e.after(s.latency(), event{kind: evSync, node: t, gen: s.nodes[t].gen, bat: b, arg: syncRepair})
	}
}

// withDeparted inserts departed node x (at xpos) into view, the live
// nodes nearest pos closest first, where it stood: the view as it was
// before x left.
func withDeparted(view []int32, x int32, xpos, pos keyspace.Pos, nodes []node) []int32 {
	i := 0
	for i < len(view) && keyspace.CloserTo(pos, nodes[view[i]].pos, xpos) {
		i++
	}
	out := make([]int32, 0, len(view)+1)
	out = append(out, view[:i]...)
	out = append(out, x)
	return append(out, view[i:]...)
}
