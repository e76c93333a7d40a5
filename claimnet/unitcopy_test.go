package claimnet_test

import (
	"context"
	"errors"
	"testing"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/testnet"
)

// TestSecondCopyOfUnitRefused: a client that claimed one copy of a unit is
// refused another copy by the replicas that hold both (here all five: r =
// 5 on five nodes), which say why; another client claims that copy. A
// client that skips its own check of units (claimclient has none) is what
// this stops; the project's one credit per client per unit stays the
// guarantee where the copies land apart.
func TestSecondCopyOfUnitRefused(t *testing.T) {
	cn := startClaimNet(t, 5, 0, 61)
	same := func(int) []string { return []string{"7"} }
	copies := testnet.SubmitJobs(t, cn.proj, 3, testnet.Jobs{Args: same})
	ctx := context.Background()
	_, greedy := cn.client(t, "greedy")
	if _, err := greedy.Claim(ctx, copies[0]); err != nil {
		t.Fatalf("first copy: %v", err)
	}
	if _, err := greedy.Claim(ctx, copies[1]); !errors.Is(err, claimclient.ErrLost) {
		t.Fatalf("second copy by the same client: %v, want refused", err)
	}
	why := 0
	for _, nd := range cn.net.Live() {
		why += nd.Claims().Counts().Why["deny: "+claim.ReasonOtherCopy]
	}
	if why < 2 {
		t.Errorf("%d denials say %q, want at least r − q + 1 = 2", why, claim.ReasonOtherCopy)
	}
	_, other := cn.client(t, "other")
	if cl, err := other.Claim(ctx, copies[1]); err != nil || cl.Certified(ctx) != nil {
		t.Fatalf("second copy by another client: %v", err)
	}
	for _, st := range cn.states(copies[1]) {
		if st.Phase != job.Claimed {
			t.Fatalf("second copy's replica state %+v, want claimed by the other client", st)
		}
	}
	// Once the nodes no longer hold the greedy client's copy, nothing
	// they hold shows it: the third copy is its to claim (the unit index
	// forgets dropped jobs).
	for _, nd := range cn.net.Live() {
		if err := nd.Pool().Forget(copies[0]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := greedy.Claim(ctx, copies[2]); err != nil {
		t.Fatalf("third copy once the first is dropped: %v", err)
	}
}
