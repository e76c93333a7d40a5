package pool_test

import (
	"context"
	"slices"
	"testing"
	"time"
)

// nodePair is two node slots.
type nodePair struct{ a, b int }

// bestPair picks the two nodes that hold together the most jobs of todo
// (jobs not yet through a double kill), given each job's holders; ties go
// to the lowest slots, so the choice is deterministic.
func bestPair(todo map[string]bool, holders map[string][]int) (nodePair, int) {
	score := map[nodePair]int{}
	for k := range todo {
		h := holders[k]
		for x := range h {
			for y := x + 1; y < len(h); y++ {
				score[nodePair{h[x], h[y]}]++
			}
		}
	}
	var best nodePair
	n := 0
	for p, s := range score {
		if s > n || s == n && (p.a < best.a || p.a == best.a && p.b < best.b) {
			best, n = p, s
		}
	}
	return best, n
}

// TestKillTwoHoldersOfEveryJob kills real nodes, not replicas: round after
// round, two nodes that both hold many jobs are stopped, until every job
// of the project's list has had 2 of its 5 holders killed at once. Within
// the one republish round after each kill, every job is back on its r
// closest live nodes (the 6th and 7th closest take the dead holders'
// place) with one state, and none is lost. The two nodes are then
// restarted on their data directories and the pool settles to exactly r
// before the next round.
func TestKillTwoHoldersOfEveryJob(t *testing.T) {
	const nodes, jobs, r = 16, 500, 5
	pn := startPoolNet(t, nodes, jobs, 25)
	ctx := context.Background()
	todo := map[string]bool{}
	for _, k := range pn.keys {
		todo[string(k)] = true
	}
	for round := 0; len(todo) > 0; round++ {
		if round == 30 {
			t.Fatalf("%d jobs still never lost two holders at once after %d rounds", len(todo), round)
		}
		holders := map[string][]int{}
		for _, k := range pn.keys {
			h := pn.net.Holders(k)
			if len(h) != r {
				t.Fatalf("round %d: job %x held by %v before the kill, want %d holders", round, k[len(k)-4:], h, r)
			}
			holders[string(k)] = h
		}
		pair, n := bestPair(todo, holders)
		if n == 0 {
			t.Fatalf("round %d: no two nodes share any of the %d remaining jobs", round, len(todo))
		}
		for _, i := range []int{pair.a, pair.b} {
			if err := pn.net.Kill(i); err != nil {
				t.Fatal(err)
			}
		}
		var doubled [][]byte
		for _, k := range pn.keys {
			if h := holders[string(k)]; slices.Contains(h, pair.a) && slices.Contains(h, pair.b) {
				doubled = append(doubled, k)
				delete(todo, string(k))
			}
		}
		st := pn.net.RepublishAll(ctx)
		t.Logf("round %d: killed nodes %d and %d, %d jobs lost 2 holders; one round: repaired %d, failed %d",
			round, pair.a, pair.b, len(doubled), st.Repaired, st.Failed)
		if st.Repaired < len(doubled) {
			t.Fatalf("round %d: %d replicas repaired, but %d jobs lost 2 holders each", round, st.Repaired, len(doubled))
		}
		pn.checkPlacement(t, false)
		for _, k := range doubled {
			live := pn.net.Holders(k)
			if len(live) < r {
				t.Fatalf("round %d: job %x on %v after the repair, want %d live holders", round, k[len(k)-4:], live, r)
			}
			if slices.Contains(live, pair.a) || slices.Contains(live, pair.b) {
				t.Fatalf("round %d: a killed node still counts as a holder of %x", round, k[len(k)-4:])
			}
		}
		// Bring the two back and settle to exactly r holders per job.
		for _, i := range []int{pair.a, pair.b} {
			if err := pn.net.Restart(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		pn.clock.Advance(10 * time.Minute) // past the dead-peer backoff
		if err := pn.net.Refill(); err != nil {
			t.Fatal(err)
		}
		pn.net.RepublishAll(ctx)
		pn.clock.Advance(61 * time.Minute) // past the replica expiry: the stand-ins drop theirs
		pn.net.RepublishAll(ctx)
		pn.checkPlacement(t, true)
	}
}
