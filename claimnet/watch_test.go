package claimnet_test

import (
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// watchTCert is T_cert in the certificate-watch tests.
const watchTCert = 400 * time.Millisecond

// uncertifiedNet starts 8 nodes with T_cert = watchTCert and one job,
// whose holders (returned nearest first) accepted client x's claim but
// refuse its certificate: the claim is uncertified everywhere.
func uncertifiedNet(t *testing.T, seed uint64) (*claimNet, []byte, []*node.Node) {
	t.Helper()
	ctx := context.Background()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: seed,
		Configure: func(_ int, c *node.Config) { c.Claim.TCert = watchTCert }})
	cn := &claimNet{net: f.Net, clock: f.Clock, proj: f.Project, keys: testnet.SubmitJobs(t, f.Project, 1, testnet.Jobs{})}
	key := cn.keys[0]
	hs := cn.holdersByDistance(key)
	for _, nd := range hs {
		deafen(nd, string(wire.ProtoCertify))
	}
	_, x := cn.client(t, "x")
	won, err := x.Claim(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := won.Certified(ctx); err != nil {
		t.Fatal(err)
	}
	return cn, key, hs
}

// TestUncertifiedClaimVoidedByWatch: a client's claim is accepted by the
// job's replicas but its certificate reaches none of them (every holder
// refuses /up/claim/certify). Such a claim denies every other client,
// and the job's closest node, holding it, does not list the job, so no
// client comes to ask: before the certificate watch it stayed until its
// deadline (T_finish). Now each acceptor, T_cert after accepting on its
// own clock, resyncs the job (no fellow replica holds a certificate) and
// voids the claim in a later round: the job is ready again on every
// holder and another client wins it. Before T_cert a round changes
// nothing.
func TestUncertifiedClaimVoidedByWatch(t *testing.T) {
	ctx := context.Background()
	cn, key, hs := uncertifiedNet(t, 83)
	for _, nd := range hs {
		if v := nd.Claims().WatchCertificates(); v != 0 {
			t.Fatalf("%s voided %d claims before T_cert", nd.Name(), v)
		}
	}
	if st, _ := hs[0].Pool().State(key); st.Phase != job.Claimed {
		t.Fatalf("the closest holds %s before T_cert, want the claim", st.Phase)
	}
	_, y := cn.client(t, "y")
	if _, err := y.Claim(ctx, key); err == nil {
		t.Fatal("another client won the job while the uncertified claim stood")
	}
	cn.clock.Advance(watchTCert + time.Second)
	testkit.WaitFor(t, 20*time.Second, "every holder to void the uncertified claim", func() bool {
		for _, nd := range hs {
			if st, _ := nd.Pool().State(key); st.Phase == job.Claimed {
				return false
			}
		}
		return true
	})
	if _, err := y.Claim(ctx, key); err != nil {
		t.Fatalf("claim after the watch voided the uncertified claim: %v", err)
	}
}

// TestUncertifiedClaimAdoptedAfterRestart: the job's closest node holds
// an uncertified claim and restarts; its claim log (in memory) is gone,
// but its store keeps the claim. The restarted service adopts it under
// the certificate watch, judged from the claim's start (+ T_skew), and
// voids it once T_cert has passed: without the adoption it kept the claim
// until the deadline, and the job unlisted.
func TestUncertifiedClaimAdoptedAfterRestart(t *testing.T) {
	ctx := context.Background()
	cn, key, hs := uncertifiedNet(t, 89)
	i := cn.net.Index(hs[0].ID())
	if err := cn.net.Kill(i); err != nil {
		t.Fatal(err)
	}
	if err := cn.net.Restart(ctx, i); err != nil {
		t.Fatal(err)
	}
	closest := cn.net.Node(i)
	if st, _ := closest.Pool().State(key); st.Phase != job.Claimed {
		t.Fatalf("the restarted closest holds %s, want the uncertified claim", st.Phase)
	}
	cn.clock.Advance(time.Duration(claim.DefaultTSkew)*time.Millisecond + watchTCert + time.Second)
	testkit.WaitFor(t, 20*time.Second, "the restarted closest to void the uncertified claim", func() bool {
		st, _ := closest.Pool().State(key)
		return st.Phase != job.Claimed
	})
}

// TestWatchSkewedClockKeepsCertifiedClaim: a replica whose clock is
// 10 min ahead, and which missed the certify of a claim that did win,
// finds the claim T_cert old at once — but its watch resyncs before it
// voids, the Resync brings the certificate from the fellow replicas, and
// the claim is settled, not voided: another client still cannot win.
func TestWatchSkewedClockKeepsCertifiedClaim(t *testing.T) {
	ctx := context.Background()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 97,
		Configure: func(_ int, c *node.Config) { c.Claim.TCert = watchTCert }})
	cn := &claimNet{net: f.Net, clock: f.Clock, proj: f.Project, keys: testnet.SubmitJobs(t, f.Project, 1, testnet.Jobs{})}
	key := cn.keys[0]
	hs := cn.holdersByDistance(key)
	skewed := hs[0]
	deafen(skewed, string(wire.ProtoCertify))
	_, x := cn.client(t, "x")
	won, err := x.Claim(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := won.Certified(ctx); err != nil {
		t.Fatal(err)
	}
	cn.net.SetClockOffset(cn.net.Index(skewed.ID()), 10*time.Minute)
	testkit.WaitFor(t, 20*time.Second, "the skewed replica's Resync to bring the certificate", func() bool {
		pr, err := job.DecodeProof(skewed.Pool().Proof(key))
		return err == nil && len(pr.Claim) > 0
	})
	skewed.Claims().WatchCertificates()
	if st, _ := skewed.Pool().State(key); st.Phase != job.Claimed {
		t.Fatalf("the skewed replica holds %s, want the certified claim", st.Phase)
	}
	if n := skewed.Claims().Counts().Voided; n != 0 {
		t.Fatalf("the skewed replica voided %d claims, want none", n)
	}
	_, y := cn.client(t, "y")
	if _, err := y.Claim(ctx, key); err == nil {
		t.Fatal("another client won a job whose certified claim stands")
	}
}
