package node_test

import (
	"testing"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/overlay"
)

// TestOneTSkew: admission's bound on a position record's future date is
// the T_skew claims and lapses use, so a clock that may confirm claims is
// also admitted.
func TestOneTSkew(t *testing.T) {
	if got, want := overlay.MaxClockSkew, time.Duration(claim.DefaultTSkew)*time.Millisecond; got != want {
		t.Fatalf("overlay.MaxClockSkew = %s, claim.DefaultTSkew = %s", got, want)
	}
}
