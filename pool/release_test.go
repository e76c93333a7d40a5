package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/job"
)

// TestReleaseConvergesWhateverExpiryTiming replays the audit's
// counterexample on real replicas: while apart, two holders of a job hold
// a live claim of client c2 (start 5 s) and the other three a later claim
// of c1 (start 10 s) that c1 released at 15 s. At 25 s they meet again.
// Whichever nodes ran their expiry loop before, every holder ends on the
// same state: the tombstone of the released later claim.
func TestReleaseConvergesWhateverExpiryTiming(t *testing.T) {
	pn := startTrustingPoolNet(t, 6, 12, 26)
	ctx := context.Background()
	variants := []struct {
		name  string
		loops func(holder int) bool // whether holder (0..4) runs its expiry loop before the sync
	}{
		{"no expiry loop ran", func(int) bool { return false }},
		{"every expiry loop ran", func(int) bool { return true }},
		{"only the releasing side's loops ran", func(h int) bool { return h >= 2 }},
		{"one loop on each side ran", func(h int) bool { return h == 1 || h == 4 }},
	}
	if len(pn.keys) < len(variants) {
		t.Fatal("too few jobs")
	}
	for v, tt := range variants {
		key := pn.keys[v]
		holders := pn.net.Holders(key)
		if len(holders) != 5 {
			t.Fatalf("%s: job held by %v", tt.name, holders)
		}
		base := pn.clock.Now().UnixMilli()
		at := func(s int64) int64 { return base + s*1000 }
		valid := job.State{Phase: job.Claimed, Client: []byte("c2"), Start: at(5), Deadline: at(100)}
		claim := job.State{Phase: job.Claimed, Client: []byte("c1"), Start: at(10), Deadline: at(3600)}
		released := claim
		released.Deadline = at(15)
		apply := func(h int, st job.State) {
			t.Helper()
			if _, err := pn.net.Node(holders[h]).Pool().ApplyProven(key, st, trustedClaim); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
		}
		pn.clock.Advance(10 * time.Second)
		for h := range holders {
			if h < 2 {
				apply(h, valid)
			} else {
				apply(h, claim)
				apply(h, released)
			}
		}
		pn.clock.Advance(15 * time.Second) // 25 s: c1's release has lapsed, c2's claim has not
		for h, i := range holders {
			if tt.loops(h) {
				pn.net.Node(i).Pool().ExpireNow()
			}
		}
		pn.net.RepublishAll(ctx)
		want := job.State{Phase: job.Ready, Client: []byte("c1"), Start: at(10)}
		for _, i := range holders {
			st, _ := pn.net.Node(i).Pool().State(key)
			if !job.Equal(st, want) {
				t.Errorf("%s: node %d holds %+v, want the tombstone %+v", tt.name, i, st, want)
			}
		}
	}
}
