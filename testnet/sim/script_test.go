package sim

import (
	"slices"
	"testing"

	"github.com/up-pool/up/claim"
)

// TestScriptClaims: a scripted race on one job with one denying replica:
// the first client wins with the other four's grants, the second loses
// while the claim stands and wins once it is released.
func TestScriptClaims(t *testing.T) {
	sc, err := NewScript(16, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Claim("client-a"); got.Outcome != claim.Won || !slices.Equal(got.Granted, []int{0, 1, 3, 4}) {
		t.Fatalf("first claim: %+v; want won with ranks 0, 1, 3, 4", got)
	}
	if got := sc.Claim("client-b"); got.Outcome != claim.Lost || len(got.Granted) != 0 {
		t.Fatalf("second claim while the first holds: %+v; want lost, no grants", got)
	}
	if err := sc.Release("client-a"); err != nil {
		t.Fatal(err)
	}
	if got := sc.Claim("client-b"); got.Outcome != claim.Won {
		t.Fatalf("second claim after the release: %+v; want won", got)
	}
	if err := sc.Release("nobody"); err == nil {
		t.Fatal("release by a client holding nothing accepted")
	}
}
