package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/job"
)

// TestPartitionConverges: split the network in two, change job states on
// both sides (claim on one, finish on the other; collect one; claim on
// both; claim on one and a later claim released on the other), heal:
// every replica converges to the merged state, on exactly the r closest
// nodes.
func TestPartitionConverges(t *testing.T) {
	pn := startTrustingPoolNet(t, 16, 100, 25)
	ctx := context.Background()
	sideA := []int{0, 1, 2, 3, 4, 5, 6, 7}
	sideB := []int{8, 9, 10, 11, 12, 13, 14, 15}
	inA := func(i int) bool { return i < 8 }
	// Pick jobs held on both sides.
	var split [][]byte
	for _, k := range pn.keys {
		h := pn.net.Holders(k)
		a, b := 0, 0
		for _, i := range h {
			if inA(i) {
				a++
			} else {
				b++
			}
		}
		if a > 0 && b > 0 {
			split = append(split, k)
		}
	}
	if len(split) < 4 {
		t.Fatalf("only %d jobs span both sides", len(split))
	}
	j1, j2, j3, j4 := split[0], split[1], split[2], split[3]
	if err := pn.net.Partition(sideA, sideB); err != nil {
		t.Fatal(err)
	}
	t0 := pn.clock.Now().UnixMilli()
	claimA := job.State{Phase: job.Claimed, Client: []byte("client-a"), Start: t0, Deadline: t0 + 3*3600_000}
	claimB := job.State{Phase: job.Claimed, Client: []byte("client-b"), Start: t0 + 5, Deadline: t0 + 3*3600_000}
	finishB, finishProof, finishEnv := pn.finished(t, j1, pn.newClient(t), t0+10)
	collectA, collectProof := pn.collected(j2, t0+20)
	releaseB := claimB
	releaseB.Deadline = t0 + 6 // released in its first millisecond (claim.Release)
	tombB := job.State{Phase: job.Ready, Client: claimB.Client, Start: claimB.Start}
	// One holder per side learns of the change; republish spreads it on
	// its side only.
	apply := func(k []byte, side func(int) bool, st job.State) {
		for _, i := range pn.net.Holders(k) {
			if side(i) {
				if _, err := pn.net.Node(i).Pool().ApplyProven(k, st, trustedClaim); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatalf("no holder of %x on that side", k)
	}
	inB := func(i int) bool { return !inA(i) }
	apply(j1, inA, claimA)
	merge := func(k []byte, side func(int) bool, st job.State, proof, env []byte) {
		for _, i := range pn.net.Holders(k) {
			if side(i) {
				pn.merge(t, i, k, st, proof, env)
				return
			}
		}
		t.Fatalf("no holder of %x on that side", k)
	}
	merge(j1, inB, finishB, finishProof, finishEnv)
	merge(j2, inA, collectA, collectProof, nil)
	apply(j3, inA, claimA)
	apply(j3, inB, claimB)
	apply(j4, inA, claimA)
	apply(j4, inB, claimB)
	apply(j4, inB, releaseB)
	for range 2 {
		pn.net.RepublishAll(ctx)
	}
	// Each side converged on its own state.
	for _, i := range pn.net.Holders(j1) {
		st, _ := pn.net.Node(i).Pool().State(j1)
		want := claimA
		if !inA(i) {
			want = finishB
		}
		if !job.Equal(st, want) {
			t.Fatalf("during the partition node %d holds j1 as %s", i, st.Phase)
		}
	}

	if err := pn.net.Heal(); err != nil {
		t.Fatal(err)
	}
	pn.clock.Advance(10 * time.Minute) // past the dead-peer backoff
	if err := pn.net.Refill(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		pn.net.RepublishAll(ctx)
	}
	pn.clock.Advance(61 * time.Minute) // past the replica expiry: extra copies go
	pn.net.RepublishAll(ctx)
	pn.checkPlacement(t, true)
	for _, c := range []struct {
		name string
		key  []byte
		want job.State
	}{
		{"claimed vs finished", j1, finishB},
		{"collected", j2, collectA},
		{"claimed on both sides", j3, claimB},
		{"claimed, and a later claim released on the other side", j4, tombB},
	} {
		for _, i := range pn.net.Holders(c.key) {
			st, _ := pn.net.Node(i).Pool().State(c.key)
			if !job.Equal(st, c.want) {
				t.Errorf("%s: node %d holds %+v, want %+v", c.name, i, st, c.want)
			}
		}
	}
}
