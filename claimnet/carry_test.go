package claimnet_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// TestResultCarriesCertificate: a result submitted within the certify
// delay carries the claim's certificate instead of a certify round. No
// node is sent a certify; the replica that did not accept the claim
// refuses the bare result (control) and a result carrying a certificate
// of another start (kept as evidence against the client), and takes the
// result with the true certificate: every replica ends finished.
func TestResultCarriesCertificate(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 73)
	ctx := context.Background()
	key := cn.keys[0]
	var certifies atomic.Int64
	for _, nd := range cn.net.Live() {
		nd.Endpoint().Handle(wire.ProtoCertify, 1<<20, []certs.Role{certs.RoleClient},
			func(context.Context, *overlay.Admitted, []byte) (any, error) {
				certifies.Add(1)
				return nil, overlay.StatusErr(wire.StatusInternal, errors.New("no certify expected"))
			})
	}
	a, cl := cn.client(t, "carrier")
	cl.SetCertifyDelay(time.Hour)
	won, err := cl.Claim(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var outside []int // replicas that did not accept: the claim is not theirs yet
	for _, i := range cn.net.Holders(key) {
		if st, _ := cn.net.Node(i).Pool().State(key); st.Phase != job.Claimed {
			outside = append(outside, i)
		}
	}
	if len(outside) == 0 {
		t.Fatal("every replica accepted the claim: nothing to learn from a carried certificate")
	}
	env := sealFor(t, cn, a, key)
	other := cn.net.Node(outside[0])
	submit := func(req *wire.ResultSubmit) error {
		return a.Endpoint().Call(ctx, other.ID(), wire.ProtoResult, req, 1024, &wire.Ping{})
	}
	if err := submit(&wire.ResultSubmit{Envelope: env, At: cn.clock.Now().UnixMilli()}); err == nil {
		t.Fatal("a replica outside the claim took a result without its certificate")
	}
	forged := &wire.ResultSubmit{Envelope: env, At: cn.clock.Now().UnixMilli(), Start: won.Start + 1, Accepts: won.Accepts}
	if err := submit(forged); err == nil {
		t.Fatal("a replica took a result carrying the certificate of another start")
	}
	if ev := other.Pool().Evidence(); len(ev) != 1 || ev[0].Sender != "carrier" || ev[0].Protocol != wire.ProtoResult {
		t.Fatalf("evidence after the forged certificate: %+v, want one record against carrier", ev)
	}
	stored, err := cl.SubmitResult(ctx, won, env)
	if err != nil || stored != 5 {
		t.Fatalf("SubmitResult = %d, %v; want 5 stored", stored, err)
	}
	for _, st := range cn.states(key) {
		if st.Phase != job.Finished {
			t.Fatalf("replica state %+v after the result, want finished", st)
		}
	}
	if n := certifies.Load(); n != 0 {
		t.Fatalf("%d certify requests sent, want none: the result carried the certificate", n)
	}
}

// TestCertifyAfterDelay: a claim whose result does not come within the
// certify delay has its certificate sent on its own: every replica ends up
// holding the claim with its certificate, without a result.
func TestCertifyAfterDelay(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 74)
	ctx := context.Background()
	key := cn.keys[0]
	_, cl := cn.client(t, "slow")
	cl.SetCertifyDelay(20 * time.Millisecond)
	if _, err := cl.Claim(ctx, key); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		certified := 0
		for _, i := range cn.net.Holders(key) {
			pool := cn.net.Node(i).Pool()
			st, _ := pool.State(key)
			if pr, err := job.DecodeProof(pool.Proof(key)); err == nil && st.Phase == job.Claimed && len(pr.Claim) > 0 {
				certified++
			}
		}
		if certified == 5 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 5 replicas hold the certified claim 10 s after the claim", certified)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestResultCarriesCertificateSkewed: the replicas' clocks are minutes
// apart (within T_skew), the ones outside the claim 8 min ahead or behind
// the client's: the certificate a result carries still proves the claim
// to them, and every replica, one 4 min behind the client included, ends
// finished. Nothing of the delay travels: it is the client's own wait.
func TestResultCarriesCertificateSkewed(t *testing.T) {
	for _, skew := range []time.Duration{8 * time.Minute, -8 * time.Minute} {
		cn, skews := startSkewedClaimNet(t, 8, 1, 76)
		ctx := context.Background()
		key := cn.keys[0]
		hs := cn.net.Holders(key)
		for n, i := range hs {
			skews[i].Store(int64(time.Duration(n%3-1) * 4 * time.Minute)) // −4, 0, +4 min
		}
		a, cl := cn.client(t, "skewed-carrier")
		cl.SetCertifyDelay(time.Hour)
		won, err := cl.Claim(ctx, key)
		if err != nil {
			t.Fatalf("skew %s: %v", skew, err)
		}
		outside := 0
		for _, i := range hs {
			if st, _ := cn.net.Node(i).Pool().State(key); st.Phase != job.Claimed {
				skews[i].Store(int64(skew))
				outside++
			}
		}
		if outside == 0 {
			t.Fatalf("skew %s: every replica accepted: nothing learned from the result", skew)
		}
		// Sent to all five at once: each answered before SubmitResult
		// returns, whatever the majority it waits for.
		if _, err := cl.SubmitResult(ctx, won, sealFor(t, cn, a, key)); err != nil {
			t.Fatalf("skew %s: SubmitResult: %v", skew, err)
		}
		for _, st := range cn.states(key) {
			if st.Phase != job.Finished {
				t.Fatalf("skew %s: replica state %+v, want finished", skew, st)
			}
		}
	}
}
