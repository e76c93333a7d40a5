package sim

import (
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
)

// The simulator steps the nodes' replica and writer rules (replica.Replan,
// replica.HandOnTo, index.Reconcile): these tests drive one job through
// each by hand and check the outcome the rule decides.

// runUntil fires the run's events up to virtual time until (ms).
func runUntil(s *Sim, until int64) {
	for {
		at, ok := s.e.peek()
		if !ok || at > until {
			return
		}
		ev, _ := s.e.next()
		s.dispatch(ev)
	}
}

// leave takes node id off the ring as a crash does, without its rejoin.
func leave(s *Sim, id int32) {
	for _, j := range sortedKeys(s.nodes[id].jobs) {
		s.dropReplica(id, j)
	}
	s.ringsDel(id)
	s.nodes[id].alive = false
}

// holders places job j on its r closest.
func holders(s *Sim, j int32) []int32 {
	ids := closestOf(s, j)
	for _, id := range ids {
		s.putReplica(id, j, job.State{})
	}
	return ids
}

// TestSyncFailureReplanned: the closest's republish sync to a replica
// that dies in flight fails after the time-out and is re-planned by
// replica.Replan on the new view, so the node that took the dead one's
// place among the r closest holds the job seconds later, not a republish
// period later (the simulator's rounds did not re-plan).
func TestSyncFailureReplanned(t *testing.T) {
	s, j := idle(t)
	ids := holders(s, j)
	s.e.now = 1_000
	s.republish(ids[0], true)
	leave(s, ids[1])
	now := closestOf(s, j)
	next := now[len(now)-1]
	if s.nodes[next].jobs[j] != nil {
		t.Fatalf("node %d, new among the r closest, holds the job already", next)
	}
	runUntil(s, s.e.now+ms(s.c.RPCTimeout)+5_000)
	if s.m.failedSyncs != 1 {
		t.Errorf("%d failed syncs, want 1 (the one to node %d)", s.m.failedSyncs, ids[1])
	}
	if s.nodes[next].jobs[j] == nil {
		t.Fatalf("node %d, new among the r closest, does not hold the job after the re-planned sync", next)
	}
}

// TestRepairOnCrash: when a node among a job's r closest crashes, the
// job's closest live node gives it to the node that entered the r closest
// in its place (replica.RepairTo) within a second, as pool.RepairNow
// does, not at the next republish round; the crashed node's down time is
// far longer.
func TestRepairOnCrash(t *testing.T) {
	s, j := idle(t)
	s.c.ChurnDown = time.Hour
	ids := holders(s, j)
	s.e.now = 1_000
	s.crash(ids[1])
	now := closestOf(s, j)
	next := now[len(now)-1]
	if s.nodes[next].jobs[j] != nil {
		t.Fatalf("node %d, new among the r closest, holds the job already", next)
	}
	runUntil(s, 2_000)
	if s.nodes[next].jobs[j] == nil {
		t.Fatalf("node %d, new among the r closest, does not hold the job a second after the crash", next)
	}
	if s.m.repairJobs != 1 {
		t.Fatalf("%d repairs counted, want 1 (one job, one departure)", s.m.repairJobs)
	}
}

// newcomerJob returns the position node x's next incarnation will join at,
// and a new job whose r closest (when onlyClosest, whose closest) it will
// be among.
func newcomerJob(t *testing.T, s *Sim, x int32, onlyClosest bool) int32 {
	t.Helper()
	next := keyspace.PeerPos([]byte(nodeName(x, s.nodes[x].gen+1)))
	for range 500 {
		j := s.newJob(0, s.tFinish)
		view := closestOf(s, j)
		than := view[len(view)-1]
		if onlyClosest {
			than = view[0]
		}
		if keyspace.CloserTo(s.jobs[j].pos, next, s.nodes[than].pos) {
			return j
		}
	}
	t.Fatal("no job for the newcomer")
	return -1
}

// TestHandOnToNewcomer: a node that joins among a job's r closest is
// handed the job by its previous closest (replica.HandOnTo) within a
// second, as pool.HandOnNow does, not at the next republish round.
func TestHandOnToNewcomer(t *testing.T) {
	s, _ := idle(t)
	x := int32(3)
	leave(s, x)
	j := newcomerJob(t, s, x, false)
	holders(s, j)
	s.e.now = 1_000
	s.join(x)
	runUntil(s, 3_000)
	if s.nodes[x].jobs[j] == nil {
		t.Fatalf("the newcomer %d does not hold the job a second after it joined among its r closest", x)
	}
	if s.m.handOnJobs == 0 {
		t.Fatal("no hand-on counted")
	}
}

// TestNewClosestTakesListingOver: a node that joins as a job's closest is
// handed the job and lists it itself (index.Reconcile places its own
// entry, at a point of its own); the previous closest keeps its entry
// listed for its hand-on grace, then, no longer wanting it, withdraws it.
// One entry is left, the newcomer's (an index node holding both keeps the
// nearer writer's: the old writer's withdrawal leaves it).
func TestNewClosestTakesListingOver(t *testing.T) {
	c := shortStatic(16, 1)
	c.RegionBits = 1 // about 8 index nodes: the two entries land apart
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	x := int32(3)
	leave(s, x)
	j := newcomerJob(t, s, x, true)
	old := holders(s, j)[0]
	runUntil(s, 30_000)
	r := &s.jobs[j]
	if r.wBy != old || r.wKw != 0 {
		t.Fatalf("before the join the job's writer is %d (keyword %d), want its closest %d", r.wBy, r.wKw, old)
	}
	oldAt := r.wTo
	s.join(x)
	entries := func() map[string]bool {
		by := map[string]bool{}
		for i := range s.nodes {
			if t := s.nodes[i].idx; t != nil {
				if e, ok := t.Get(s.c.Keyword, r.key); ok {
					by[e.Writer] = true
				}
			}
		}
		return by
	}
	runUntil(s, 30_000+30_000)
	by := entries()
	if r.wBy != x || !by[s.nodes[x].name] {
		t.Fatalf("30 s after the join the writer is %d, entries by %v; want the newcomer %d's", r.wBy, by, x)
	}
	if r.wTo != oldAt && (len(by) != 2 || !by[s.nodes[old].name]) {
		t.Fatalf("30 s after the join, within the old closest's grace, entries by %v; want its and the newcomer's", by)
	}
	runUntil(s, 30_000+120_000)
	if by := entries(); len(by) != 1 || !by[s.nodes[x].name] {
		t.Fatalf("2 min after the join entries by %v; want the newcomer %q's alone", by, s.nodes[x].name)
	}
}
