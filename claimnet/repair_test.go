package claimnet_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/wire"
)

// TestFailedClaimRepairsReplicaSet: two of a job's five closest nodes
// lack it (a holder left and the next closest was not handed the job
// yet), so a claim gets three grants and two "don't care" — short of the
// quorum of four. The failed attempt's release asks the nearest granting
// node to repair the job's replica set (ReleaseRequest.Repair); it
// resyncs the job with its r closest at once, and the next attempt wins.
// Control: the same grants released without the flag leave the replica
// set short.
func TestFailedClaimRepairsReplicaSet(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 91)
	ctx := context.Background()
	key := cn.keys[0]
	a, cl := cn.client(t, "alice")
	closest, err := a.DHT().ClosestN(ctx, key, 5)
	if err != nil || len(closest) != 5 {
		t.Fatalf("closest of the job: %v %v", closest, err)
	}
	// Newcomers still pending at a node would be handed the job back:
	// hand them on now, before two of the closest lose it.
	for _, nd := range cn.net.Live() {
		nd.Pool().HandOnNow(ctx)
	}
	for _, p := range []peer.ID{closest[1], closest[3]} {
		if err := cn.net.Node(cn.net.Index(p)).Pool().Forget(key); err != nil {
			t.Fatal(err)
		}
	}
	quiesce := func() {
		for _, nd := range cn.net.Live() {
			nd.Pool().Quiesce()
		}
	}

	// Control: ask each node and release the grants plainly.
	for _, p := range closest {
		var resp wire.ClaimResponse
		if err := a.Endpoint().Call(ctx, p, wire.ProtoClaim, &wire.ClaimRequest{Job: key}, wire.MaxReplyBytes, &resp); err != nil {
			t.Fatal(err)
		}
		if _, st, err := claim.Decode(resp.Reply); err != nil || st.Kind != claim.Granted {
			continue
		}
		if err := a.Endpoint().Call(ctx, p, wire.ProtoRelease, &wire.ReleaseRequest{Job: key}, 1024, &wire.Ping{}); err != nil {
			t.Fatal(err)
		}
	}
	quiesce()
	if got := len(cn.net.Holders(key)); got != 3 {
		t.Fatalf("after plain releases %d nodes hold the job, want still 3", got)
	}

	// Claim, not ClaimAt with a hint: a failed hinted attempt falls back
	// to a lookup and a second attempt, which the repair already serves.
	_, err = cl.Claim(ctx, key)
	if !errors.Is(err, claimclient.ErrNoQuorum) {
		t.Fatalf("claim with two of five lacking the job: %v, want %v", err, claimclient.ErrNoQuorum)
	}
	quiesce()
	holders := cn.net.Holders(key)
	for _, p := range closest {
		if !slices.Contains(holders, cn.net.Index(p)) {
			t.Errorf("after the failed attempt's repair, closest node %s lacks the job", p)
		}
	}
	won, err := cl.Claim(ctx, key)
	if err != nil {
		t.Fatalf("claim after the repair: %v", err)
	}
	if err := won.Certified(ctx); err != nil {
		t.Fatal(err)
	}
}
