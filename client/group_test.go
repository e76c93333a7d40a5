package client_test

import (
	"testing"
	"time"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/wire"
)

// TestAutoGroup: a claim group chosen per claim is what the slots run
// within half of T_finish, less the jobs held, between 1 and the wire's
// bound; one job while the application never ran here.
func TestAutoGroup(t *testing.T) {
	for _, tc := range []struct {
		name         string
		tFinish, est time.Duration
		known        bool
		slots, held  int
		want         int
	}{
		{"never ran here", 10 * time.Minute, time.Second, false, 4, 0, 1},
		{"short jobs fill the bound", 5 * time.Minute, 2 * time.Millisecond, true, 2, 0, wire.MaxClaimMany},
		{"zero estimate counts as a millisecond", time.Second, 0, true, 1, 0, wire.MaxClaimMany},
		{"half of T_finish", 10 * time.Minute, time.Minute, true, 2, 0, 10},
		{"held jobs come first", 10 * time.Minute, time.Minute, true, 2, 4, 6},
		{"held beyond the room", 10 * time.Minute, time.Minute, true, 2, 30, 1},
		{"one run fills half of T_finish", 10 * time.Minute, 5 * time.Minute, true, 8, 0, 8},
		{"longer than half of T_finish", 10 * time.Minute, 6 * time.Minute, true, 8, 0, 1},
		{"no T_finish", 0, time.Second, true, 2, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := client.AutoGroup(tc.tFinish, tc.est, tc.known, tc.slots, tc.held); got != tc.want {
				t.Fatalf("AutoGroup(%v, %v, %v, %d, %d) = %d, want %d", tc.tFinish, tc.est, tc.known, tc.slots, tc.held, got, tc.want)
			}
		})
	}
}
