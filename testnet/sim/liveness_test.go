package sim

import (
	"testing"

	"github.com/up-pool/up/job"
	replicarule "github.com/up-pool/up/replica"
)

// newIdle is a simulator of n nodes, joined, nothing run yet.
func newIdle(t *testing.T, c Config) *Sim {
	t.Helper()
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pingsAt(s *Sim, ids ...int32) (n uint32) {
	for _, id := range ids {
		n += s.nodes[id].cnt[kPing]
	}
	return n
}

// TestRoundProbesUnheardPeers: a round pings each peer its views name
// once, none it heard from within ProbeFresh, and a peer that restarted
// since (its connection, and what was heard over it, is gone); with
// ProbeFresh negative (AlwaysProbe) it pings them every round — the
// control.
func TestRoundProbesUnheardPeers(t *testing.T) {
	c := shortStatic(16, 10)
	c.ChurnRestart = true
	s := newIdle(t, c)
	jobs := []replicarule.RoundJob[int32]{{View: []int32{0, 1, 2}}, {View: []int32{2, 3, 0}}}
	s.probeRound(0, jobs)
	if got := pingsAt(s, 1, 2, 3); got != 3 || pingsAt(s, 0) != 0 {
		t.Fatalf("first round: %d pings to peers 1–3, %d to itself; want 3, 0", got, pingsAt(s, 0))
	}
	s.probeRound(0, jobs)
	if got := pingsAt(s, 1, 2, 3); got != 3 {
		t.Fatalf("second round: %d pings in all; want none more (all heard)", got)
	}
	s.crash(2)
	s.join(2)
	s.probeRound(0, jobs)
	if got := pingsAt(s, 2); got != 2 {
		t.Fatalf("after peer 2 restarted: %d pings to it; want 2", got)
	}
	c.ProbeFresh = -1
	s = newIdle(t, c)
	s.probeRound(0, jobs)
	s.probeRound(0, jobs)
	if got := pingsAt(s, 1, 2, 3); got != 6 {
		t.Fatalf("control (always probe): %d pings in two rounds; want 6", got)
	}
}

// TestRestartLosesIndexState: an index node that restarts lost its table,
// so the writer no longer counts its entry as written there; a writer
// that restarts remembers no entry and looks at its jobs at its first
// tick. Control: before the restarts the entry counts as written.
func TestRestartLosesIndexState(t *testing.T) {
	c := shortStatic(16, 10)
	c.ChurnRestart = true
	s := newIdle(t, c)
	s.jobs = append(s.jobs, jobRec{wKw: 0, wBy: 3, wByGen: s.nodes[3].gen, wTo: 5, wToGen: s.nodes[5].gen, wToRun: s.nodes[5].runs})
	if !s.writes(3, 0) {
		t.Fatal("control: the entry does not count as written before any restart")
	}
	s.crash(5)
	s.join(5)
	if s.writes(3, 0) {
		t.Fatal("the writer counts its entry as written at an index node that restarted (its table is gone)")
	}
	r := &s.jobs[0]
	r.wToRun = s.nodes[5].runs
	s.nodes[3].jobs[0] = &replica{st: job.State{Phase: job.Ready}}
	s.crash(3)
	s.join(3)
	if r.wKw != -1 {
		t.Fatal("a restarted writer still counts the entry it wrote before the restart")
	}
	if len(s.nodes[3].wq) != 1 || s.nodes[3].wq[0].job != 0 {
		t.Fatalf("a restarted writer queued %v for its first tick; want its job", s.nodes[3].wq)
	}
}

// TestUncertifiedClaimNotTaken: a claimed state, or its tombstone, whose
// claim fewer than a quorum of nodes accepted has no certificate: a node
// does not take it from another (a confirm accepted on stale grants by a
// node that never heard of the claim already won would otherwise
// override it — a double claim). Control: with a quorum of acceptances
// the same state is taken.
func TestUncertifiedClaimNotTaken(t *testing.T) {
	s := newIdle(t, shortStatic(16, 10))
	s.jobs = append(s.jobs, jobRec{tFinish: s.tFinish})
	held := job.State{Phase: job.Ready}
	in := job.State{Phase: job.Claimed, Client: []byte("client-1"), Start: 10, Deadline: 10 + s.tFinish}
	ref := claimRef{job: 0, start: 10, client: "client-1"}
	s.accepts[ref] = s.c.ClaimQuorum - 1
	if got := s.receive(1, 0, held, in); got.Phase != job.Ready {
		t.Fatalf("a claim %d nodes accepted was taken: %v", s.accepts[ref], got)
	}
	tomb := job.State{Phase: job.Ready, Client: in.Client, Start: in.Start}
	if got := s.receive(1, 0, held, tomb); !job.Equal(got, held) {
		t.Fatalf("the tombstone of an uncertified claim was taken: %v", got)
	}
	if s.m.uncertifiedRefused != 2 {
		t.Fatalf("%d refusals counted; want 2", s.m.uncertifiedRefused)
	}
	s.accepts[ref] = s.c.ClaimQuorum
	if got := s.receive(1, 0, held, in); got.Phase != job.Claimed {
		t.Fatalf("control: a certified claim was not taken: %v", got)
	}
}
