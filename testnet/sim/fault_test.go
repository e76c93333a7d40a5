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
		if _, st := s.heldState(a, j); st.Phase != tc.want {
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

// withinF counts, among jobs with at most f faulty replicas, those lost
// (every replica gone, or never stored), double-claimed and never
// claimed.
func withinF(s *Sim, f int) (lost, doubles, unclaimed int) {
	for j := range s.jobs {
		r := &s.jobs[j]
		if int(r.faulty) > f {
			continue
		}
		if r.lost || r.swallowed {
			lost++
		}
		if !r.claimed {
			unclaimed++
		}
	}
	doubles = s.m.doubleClaims
	if f < s.c.R {
		doubles -= s.m.doublesBeyondF
	}
	return lost, doubles, unclaimed
}

// byzShort is a small static run with Byzantine nodes and skewed and
// jumping clocks.
func byzShort(byz float64, bs ...Behaviour) Config {
	c := shortStatic(128, 600)
	c.Byzantine, c.Behaviours, c.Skewed, c.Jump = byz, bs, 0.3, 0.02
	return c
}

// dynShort is a short dynamic run: clients keep coming, so index entries
// of claimed jobs are served again and clients race for them.
func dynShort(byz float64, bs ...Behaviour) Config {
	c := byzShort(byz, bs...)
	c.Workload, c.Jobs, c.Rate = Dynamic, 0, 10
	c.Duration, c.JobLength, c.Quarantine = 20*time.Minute, 10*time.Minute, time.Minute
	return c
}

// TestByzantineWithinF: with 10 % Byzantine nodes of every behaviour but
// drop, 30 % skewed clocks (±10 min) and 2 % that jump an hour (a faulty
// replica too), no job with at most f faulty replicas is lost or
// double-claimed, none of the static run's is left unclaimed, and forged
// states are refused. The negative controls show the check can fail when
// faults exceed f: 40 % deniers leave jobs with two of them unclaimed,
// and racing clients win jobs with three forgers among five twice.
func TestByzantineWithinF(t *testing.T) {
	f := claim.Faults(5)
	s := run(t, byzShort(0.1, Deny, Forge, Silent, Withhold))
	ff := s.faultFigures()
	t.Logf("static: %+v", ff)
	if lost, doubles, unclaimed := withinF(s, f); lost != 0 || doubles != 0 || unclaimed != 0 {
		t.Errorf("static, within f: %d lost, %d double claims, %d unclaimed; want none", lost, doubles, unclaimed)
	}
	if ff.ForgedRefused == 0 {
		t.Error("no forged state was refused: the forgers did not forge")
	}
	s = run(t, byzShort(0.4, Deny))
	if _, _, unclaimed := withinF(s, f+1); unclaimed == 0 {
		t.Error("40 % deniers: no job with two of them went unclaimed; the check cannot fail")
	}
	if _, _, unclaimed := withinF(s, f); unclaimed != 0 {
		t.Errorf("40 %% deniers: %d jobs with at most f of them unclaimed", unclaimed)
	}
	if testing.Short() {
		return
	}
	s = run(t, dynShort(0.1, Deny, Forge, Silent, Withhold))
	if lost, doubles, _ := withinF(s, f); lost != 0 || doubles != 0 {
		t.Errorf("dynamic, within f: %d lost, %d double claims; want none", lost, doubles)
	}
	s = run(t, dynShort(0.6, Forge))
	if _, doubles, _ := withinF(s, 5); doubles == 0 {
		t.Error("60 % forgers: no double claim; the check cannot fail")
	}
	t.Logf("60 %% forgers: %d double claims, %d of them beyond f", s.m.doubleClaims, s.m.doublesBeyondF)
}

// TestDroppingFirstNodeSwallowsNothing: with 20 % of the nodes dropping
// every job they are sent (they acknowledge, sign their own receipt and
// keep nothing), the project counts a job submitted only on
// claim.ReceiptsNeeded signed receipts, so a job a dropping first node
// took goes on through the job's next closest node: no job with at most
// f faulty replicas is swallowed or lost, and jobs were sent again. The
// jobs within f left unclaimed are those whose closest node drops: held
// by the four others, listed by none (the simulator's writer lists from
// the closest only; the nodes' backup listers are not modelled). The
// negative control trusts one first node a job (FirstNodes 1, the
// submission before receipts): dropping first nodes then swallow jobs
// within f.
func TestDroppingFirstNodeSwallowsNothing(t *testing.T) {
	f := claim.Faults(5)
	s := run(t, byzShort(0.2, Drop))
	ff := s.faultFigures()
	t.Logf("receipts: %d resubmitted, %d given up, %d swallowed, %d lost (%d beyond f), %d unclaimable (%d beyond f)",
		ff.Resubmitted, ff.GivenUp, ff.Swallowed, ff.Lost, ff.LostBeyondF, ff.Unclaimable, ff.UnclaimableBeyondF)
	if lost, doubles, _ := withinF(s, f); lost != 0 || doubles != 0 {
		t.Errorf("within f: %d lost, %d double claims; want none", lost, doubles)
	}
	if ff.Resubmitted == 0 {
		t.Error("no job was sent again: no first node dropped one")
	}
	if ff.Swallowed != 0 {
		t.Errorf("%d jobs swallowed; want none (each would need %d dropping first nodes in a row)", ff.Swallowed, s.c.FirstNodes)
	}
	for j := range s.jobs {
		r := &s.jobs[j]
		if int(r.faulty) > f || r.claimed {
			continue
		}
		if c := s.view(0).closestOne(r.pos); s.fault[c] != Drop || r.live < int16(s.c.R-f) {
			t.Errorf("job %d within f unclaimed: closest node %d is %v, %d replicas", j, c, s.fault[c], r.live)
		}
	}

	c := byzShort(0.2, Drop)
	c.FirstNodes = 1
	s = run(t, c)
	ff = s.faultFigures()
	t.Logf("one first node: %d resubmitted, %d given up, %d swallowed", ff.Resubmitted, ff.GivenUp, ff.Swallowed)
	if lost, _, _ := withinF(s, f); lost == 0 || ff.Swallowed == 0 || ff.Resubmitted != 0 {
		t.Errorf("one first node: %d lost within f, %d swallowed, %d resubmitted; want jobs swallowed, none resubmitted", lost, ff.Swallowed, ff.Resubmitted)
	}
}
