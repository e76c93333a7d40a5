package sim

import (
	"testing"

	"github.com/up-pool/up/job"
)

// TestRoundSkipsCollectedSynced: the closest's rounds skip a collected
// job they synced to the same view, as pool's rounds do
// (replica.SkipSync): a replica that silently lost the job gets it back
// only at the next full round (the fifth, with full rounds every
// fourth); a replica that restarted (a new run: a new view hash) is
// synced at once. Control: with every round full, the lost replica gets
// it back at the next round.
func TestRoundSkipsCollectedSynced(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fullEvery int
		backAt    int // the round (1-based) after which the lost replica holds the job again
	}{
		{"full every 4th round", 4, 5},
		{"control: every round full", 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, j := idle(t)
			s.c.RepublishFullEvery = tc.fullEvery
			ids := holders(s, j)
			collected := job.State{Phase: job.Collected, At: 500}
			for _, id := range ids {
				s.nodes[id].jobs[j].st = collected
			}
			s.e.now = 1_000
			round := func() {
				s.republish(ids[0], false)
				runUntil(s, s.e.now+5_000)
			}
			round() // the first, full: marks the job synced
			delete(s.nodes[ids[1]].jobs, j)
			for r := 2; r <= 5; r++ {
				round()
				held := s.nodes[ids[1]].jobs[j] != nil
				if want := r >= tc.backAt; held != want {
					t.Fatalf("after round %d the replica that lost the job holds it: %v, want %v", r, held, want)
				}
			}
			if tc.fullEvery == 4 && s.m.skippedSyncs != 3 {
				t.Errorf("%d syncs skipped, want 3 (rounds 2 to 4)", s.m.skippedSyncs)
			}
			if tc.fullEvery == 1 && s.m.skippedSyncs != 0 {
				t.Errorf("%d syncs skipped with every round full", s.m.skippedSyncs)
			}
		})
	}
}

// TestRestartedReplicaSyncedAtOnce: a replica that restarted is in a new
// run, so the view hashes anew and the next round syncs the job to it,
// full round or not.
func TestRestartedReplicaSyncedAtOnce(t *testing.T) {
	s, j := idle(t)
	ids := holders(s, j)
	for _, id := range ids {
		s.nodes[id].jobs[j].st = job.State{Phase: job.Collected, At: 500}
	}
	s.e.now = 1_000
	s.republish(ids[0], false)
	runUntil(s, s.e.now+5_000)
	delete(s.nodes[ids[1]].jobs, j) // restarted on an older copy of its store
	s.nodes[ids[1]].runs++
	s.republish(ids[0], false)
	runUntil(s, s.e.now+5_000)
	if s.nodes[ids[1]].jobs[j] == nil {
		t.Fatal("the restarted replica was not synced at the next round")
	}
	if s.m.skippedSyncs != 0 {
		t.Errorf("%d syncs skipped, want 0 (the view changed)", s.m.skippedSyncs)
	}
}

// TestFailedSyncNotMarked: a round's sync that fails (lost on the way:
// the target stays in the view) takes the job's mark back, so the next
// round syncs the job again though it is not full. Control: without the
// failure the next round skips it.
func TestFailedSyncNotMarked(t *testing.T) {
	for _, lost := range []bool{true, false} {
		s, j := idle(t)
		ids := holders(s, j)
		collected := job.State{Phase: job.Collected, At: 500}
		for _, id := range ids {
			s.nodes[id].jobs[j].st = collected
		}
		s.e.now = 1_000
		s.republish(ids[0], false)
		runUntil(s, s.e.now+5_000)
		if lost {
			from := ids[0]
			s.syncFailed(event{kind: evSyncFailed, node: from, gen: s.nodes[from].gen, job: ids[1], arg: syncRound,
				bat: &batch{from: from, fromGen: s.nodes[from].gen, items: []syncItem{{job: j, st: collected}}, attempt: 0}})
		}
		before := s.m.skippedSyncs
		s.republish(ids[0], false)
		skipped := s.m.skippedSyncs - before
		if lost && skipped != 0 {
			t.Errorf("the round after a failed sync skipped %d jobs, want 0", skipped)
		}
		if !lost && skipped != 1 {
			t.Errorf("control: the round after a successful one skipped %d jobs, want 1", skipped)
		}
	}
}
