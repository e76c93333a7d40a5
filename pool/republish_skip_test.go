package pool_test

import (
	"context"
	"testing"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/pool"
)

// TestRoundSkipsCollectedSynced: a republish round skips the collected
// jobs an earlier round synced to the same view; a replica admitted anew
// (restarted) is synced again at once, and a replica that lost a
// collected job without restarting gets it back at the next full round
// (every RepublishFullEvery-th). Jobs not collected are synced every
// round.
func TestRoundSkipsCollectedSynced(t *testing.T) {
	pn := startPoolNetWith(t, 8, 6, 41, pool.Config{RepublishFullEvery: 4})
	ctx := context.Background()
	key := pn.keys[0]
	closest := pn.closestIdx(key, 5)
	at := pn.clock.Now().UnixMilli()
	st, proof := pn.collected(key, at)
	for _, i := range closest {
		pn.merge(t, i, key, st, proof, nil)
	}
	home := pn.net.Node(closest[0]).Pool()
	round := func() pool.RoundStats {
		t.Helper()
		s := home.RepublishRound(ctx)
		pn.quiesce()
		return s
	}
	r0 := round() // the first round is full
	if r0.Skipped != 0 {
		t.Fatalf("the first (full) round skipped %d syncs", r0.Skipped)
	}
	r1 := round()
	if r1.Skipped != 4 {
		t.Fatalf("round 2 skipped %d syncs, want the collected job's 4", r1.Skipped)
	}
	if r1.Synced != r0.Synced-4 {
		t.Fatalf("round 2 synced %d states, want the first round's %d less the 4 skipped (jobs not collected synced every round)", r1.Synced, r0.Synced)
	}
	// A replica that lost the job without restarting (its view is the
	// same) waits for the next full round: rounds 3 and 4 skip it, the
	// fifth (index 4) is full.
	lost := pn.net.Node(closest[1]).Pool()
	if err := lost.Forget(key); err != nil {
		t.Fatal(err)
	}
	for n := 3; n <= 4; n++ {
		if r := round(); r.Skipped != 4 {
			t.Fatalf("round %d skipped %d syncs, want 4", n, r.Skipped)
		}
		if _, held := lost.State(key); held {
			t.Fatalf("round %d, skipping, gave the job back", n)
		}
	}
	if r := round(); r.Skipped != 0 {
		t.Fatalf("the full round skipped %d syncs", r.Skipped)
	}
	if got, held := lost.State(key); !held || got.Phase != job.Collected {
		t.Fatalf("after the full round the replica that lost the job holds %v (held %v), want it collected", got.Phase, held)
	}
	if r := round(); r.Skipped != 4 {
		t.Fatalf("the round after the full one skipped %d syncs, want 4", r.Skipped)
	}
	// A replica restarted is admitted anew: its view hashes differently,
	// and the job is synced to the whole view at once.
	if err := pn.net.Kill(closest[2]); err != nil {
		t.Fatal(err)
	}
	pn.rejoin(t, []int{closest[2]})
	if r := round(); r.Skipped != 0 {
		t.Fatalf("the round after a replica restarted skipped %d syncs of its view", r.Skipped)
	}
}
