package claimnet_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// denierNet starts a claim network of 8 nodes and one job with five
// holders (returned nearest first), the farthest of which denies every
// claim: a job one more faulty replica makes unclaimable.
func denierNet(t *testing.T, seed uint64) (*claimNet, []byte, []*node.Node) {
	t.Helper()
	cn := startClaimNet(t, 8, 1, seed)
	key := cn.keys[0]
	hs := cn.holdersByDistance(key)
	if len(hs) != 5 {
		t.Fatalf("job held by %d nodes, want 5", len(hs))
	}
	denyAll(hs[4])
	return cn, key, hs
}

// TestStaleClaimResynced: a client wins a job and gives it back, but its
// release never reaches one replica, which keeps the claim; another
// replica denies every claim. With one stale and one faulty replica of
// five no quorum is left, and before the stale replica learnt the release
// only at its next republish round (25 min). Now its denial makes it
// resync the job with its fellow replicas at once: it takes their
// tombstone (with the client's release signature as proof), and the next
// client's claim succeeds.
func TestStaleClaimResynced(t *testing.T) {
	ctx := context.Background()
	cn, key, hs := denierNet(t, 73)
	stale := hs[1]
	xa, x := cn.client(t, "x")
	x.SetSigner(xa.Identity().Key) // its release carries its signature: the tombstone's proof
	won, err := x.Claim(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	stale.Endpoint().Handle(wire.ProtoRelease, 1024, []certs.Role{certs.RoleClient},
		func(context.Context, *overlay.Admitted, []byte) (any, error) {
			return nil, overlay.StatusErr(wire.StatusInternal, errors.New("release lost"))
		})
	x.Release(ctx, won, wire.SkipUnknown)
	if st, _ := stale.Pool().State(key); st.Phase != job.Claimed {
		t.Fatalf("the stale replica holds %s, want the released claim still", st.Phase)
	}
	_, y := cn.client(t, "y")
	if _, err := y.Claim(ctx, key); err == nil {
		t.Fatal("claimed past a stale and a denying replica of five: want no quorum")
	}
	var st job.State
	if !testkit.Poll(10*time.Second, func() bool { // awaiting a background sync
		st, _ = stale.Pool().State(key)
		return st.Phase == job.Ready
	}) {
		for _, nd := range hs {
			st, _ := nd.Pool().State(key)
			t.Logf("%s: %+v evidence %v", nd.Name(), st, nd.Pool().Evidence())
		}
		t.Fatalf("the stale replica still holds %s 10 s after denying a claim: not resynced", st.Phase)
	}
	if _, err := y.Claim(ctx, key); err != nil {
		t.Fatalf("claim after the resync: %v", err)
	}
}

// TestUncertifiedClaimVoided: one replica holds a claim that never got a
// certificate (its client did not win a quorum, and the release to this
// replica was lost) and another denies everything: no quorum is left. The
// stale replica resyncs (no fellow replica holds a certificate), and once
// the claim is T_cert old it voids the claim when the next client asks,
// which then wins the job. Before T_cert it keeps it.
func TestUncertifiedClaimVoided(t *testing.T) {
	ctx := context.Background()
	cn, key, hs := denierNet(t, 79)
	stale := hs[1]
	xa, _ := cn.client(t, "x")
	now := cn.clock.Now().UnixMilli()
	h, _ := stale.Pool().Lookup(key)
	uncertified := job.State{Phase: job.Claimed, Client: []byte(xa.Identity().Key.Public().(ed25519.PublicKey)), Start: now, Deadline: now + h.TFinish}
	if _, err := stale.Pool().Apply(key, uncertified); err != nil {
		t.Fatal(err)
	}
	_, y := cn.client(t, "y")
	if _, err := y.Claim(ctx, key); err == nil {
		t.Fatal("claimed past a stale and a denying replica of five: want no quorum")
	}
	testkit.WaitFor(t, 10*time.Second, "the stale replica to resync the job after denying a claim", func() bool {
		return stale.Pool().ResyncedSince(key, now) // a background sync
	})
	if _, err := y.Claim(ctx, key); err == nil {
		t.Fatal("the uncertified claim was voided before T_cert")
	}
	// No record of accepting it (applied directly): judged from its start,
	// by the latest clock allowed (T_skew), then T_cert (1 min).
	cn.clock.Advance(time.Duration(claim.DefaultTSkew)*time.Millisecond + time.Minute + time.Second)
	if _, err := y.Claim(ctx, key); err != nil {
		t.Fatalf("claim after T_cert: %v", err)
	}
	if st, _ := stale.Pool().State(key); st.Phase != job.Claimed || string(st.Client) == string([]byte(xa.Identity().Key.Public().(ed25519.PublicKey))) {
		t.Fatalf("the stale replica holds %+v, want y's claim", st)
	}
}

// TestReleaseDuringConfirm: the client's release reaches a node while
// that node is applying the client's confirm (after its check, before its
// merge). The release ends the temporary claim and finds no claim yet;
// the confirm must not then leave a claim behind that no one will release
// (it denied every other client, uncertified, until T_cert).
func TestReleaseDuringConfirm(t *testing.T) {
	ctx := context.Background()
	cn := startClaimNet(t, 8, 1, 89)
	key := cn.keys[0]
	hs := cn.holdersByDistance(key)
	xa, x := cn.client(t, "x")
	x.SetSigner(xa.Identity().Key)
	victim := hs[2]
	released := make(chan error, 1)
	var once sync.Once
	victim.Claims().SetBeforeConfirmApply(func(k []byte) {
		once.Do(func() {
			req := &wire.ReleaseRequest{Job: k}
			var resp wire.Ping
			released <- xa.Endpoint().Call(ctx, victim.ID(), wire.ProtoRelease, req, 1024, &resp)
		})
	})
	if _, err := x.Claim(ctx, key); err != nil {
		t.Logf("claim: %v", err) // the victim refused its confirm: 4 of 5 may still win
	}
	if err := <-released; err != nil {
		t.Fatalf("release during the confirm: %v", err)
	}
	if st, _ := victim.Pool().State(key); st.Phase == job.Claimed {
		t.Fatalf("the node holds %+v after a release that came during its confirm", st)
	}
}
