package sim

import (
	"testing"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
)

// idle builds a small run whose events have not started, for driving the
// nodes' handlers by hand.
func idle(t *testing.T) (*Sim, int32) {
	t.Helper()
	s, err := New(shortStatic(16, 1))
	if err != nil {
		t.Fatal(err)
	}
	return s, s.newJob(0, s.tFinish)
}

// closestOf is job j's r closest live nodes.
func closestOf(s *Sim, j int32) []int32 {
	return s.view(0).closest(s.jobs[j].pos, s.c.R, nil)
}

// TestTombstoneKeepsOutOfLiveClaim: a tombstone of the very claim a node
// holds, from a replica whose clock jumped ahead (or that lies), does not
// end the claim while it is live on the node's own clock (job.Receive).
func TestTombstoneKeepsOutOfLiveClaim(t *testing.T) {
	s, j := idle(t)
	ids := closestOf(s, j)
	a, b := ids[0], ids[1]
	c := []byte("client01")
	s.e.now = 10_000
	s.putReplica(a, j, job.State{Phase: job.Claimed, Client: c, Start: 5_000, Deadline: 5_000 + s.tFinish})
	tomb := job.State{Phase: job.Ready, Client: c, Start: 5_000}
	s.sync(event{kind: evSync, node: a, gen: s.nodes[a].gen,
		bat: &batch{from: b, fromGen: s.nodes[b].gen, items: []syncItem{{job: j, st: tomb}}}})
	if got := s.nodes[a].jobs[j].st; got.Phase != job.Claimed {
		t.Fatalf("the live claim became %v after a tombstone arrived; want it kept", got.Phase)
	}
}

// TestClaimLapsesTSkewLate: a node ends a claim T_skew after its deadline
// on its own clock (job.Lapse, thesis 3.2.4), not at the deadline.
func TestClaimLapsesTSkewLate(t *testing.T) {
	s, j := idle(t)
	a := closestOf(s, j)[0]
	c := []byte("client01")
	s.putReplica(a, j, job.State{Phase: job.Claimed, Client: c, Start: 1_000, Deadline: 1_000 + s.tFinish})
	for _, tc := range []struct {
		after int64
		want  job.Phase
	}{{time.Minute.Milliseconds(), job.Claimed}, {claim.DefaultTSkew + 1, job.Ready}} {
		s.e.now = 1_000 + s.tFinish + tc.after
		if _, st, _ := s.heldState(a, j); st.Phase != tc.want {
			t.Errorf("%d ms past the deadline the claim reads %v; want %v", tc.after, st.Phase, tc.want)
		}
	}
}

// TestResultNeedsMajority: a client whose result only one replica can
// store has not delivered it: it looks the job up and sends the result to
// the current r closest as well (delivered at ⌊r/2⌋+1 replicas).
func TestResultNeedsMajority(t *testing.T) {
	s, j := idle(t)
	ids := closestOf(s, j)
	s.putReplica(ids[0], j, job.State{})
	att := s.newAttempt(false)
	att.job = j
	for _, id := range ids {
		att.replies = append(att.replies, claim.Reply{Node: s.nodes[id].name, Kind: claim.Granted})
	}
	before := s.e.Pending()
	s.clientDone(att)
	if sent := s.e.Pending() - before; sent != 2*len(ids) {
		t.Fatalf("the client sent its result %d times; want %d (the claim's nodes, then the r closest)", sent, 2*len(ids))
	}
}
