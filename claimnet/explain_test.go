package claimnet_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/up-pool/up/wire"
)

// TestJobExplain: a replica answers what it holds of a job — open, then
// claimed by the client with the claim's age, then open again with the
// client's release and its reason recorded, attributed to the client; a
// node that does not hold the job says so, and a client may not ask.
func TestJobExplain(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 61)
	ctx := context.Background()
	key := cn.keys[0]
	holders := cn.net.Holders(key)
	ask := func(i int) *wire.JobExplainResponse {
		t.Helper()
		var resp wire.JobExplainResponse
		if err := cn.proj.Agent().Endpoint().Call(ctx, cn.net.Node(i).ID(), wire.ProtoJobExplain, &wire.JobExplainRequest{Job: key}, wire.MaxExplainFrame, &resp); err != nil {
			t.Fatalf("explain at node %d: %v", i, err)
		}
		return &resp
	}
	if r := ask(holders[0]); !r.Held || r.State != "open" || r.Releases != 0 || len(r.Claimant) != 0 {
		t.Fatalf("before any claim: %+v, want held open", r)
	}
	a, cl := cn.client(t, "explained")
	won, err := cl.Claim(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// The replicas outside the quorum learn the claim from its
	// certificate, which Claim hands on in the background.
	if err := won.Certified(ctx); err != nil {
		t.Fatal(err)
	}
	claimant := a.Identity().Key.Public().(ed25519.PublicKey)
	cn.clock.Advance(3 * time.Second)
	r := ask(holders[0])
	if r.State != "claimed" || !bytes.Equal(r.Claimant, claimant) || r.ClaimAgeMS < 3000 {
		t.Fatalf("claimed: %+v, want claimed by %x at least 3 s ago", r, claimant)
	}
	cl.Release(ctx, won, wire.SkipNotAllowed)
	for _, i := range holders {
		r := ask(i)
		if r.State != "open" || r.Releases != 1 || len(r.Notes) != 1 || r.Notes[0].Reason != wire.SkipNotAllowed || !bytes.Equal(r.Notes[0].Client, claimant) {
			t.Fatalf("node %d after the release: %+v, want open with one release for reason not allowed by %x", i, r, claimant)
		}
	}
	for i := range cn.net.Len() {
		held := false
		for _, h := range holders {
			held = held || h == i
		}
		if !held {
			if r := ask(i); r.Held || r.State != "" {
				t.Fatalf("node %d, not a holder, answers %+v", i, r)
			}
			break
		}
	}
	var resp wire.JobExplainResponse
	if err := a.Endpoint().Call(ctx, cn.net.Node(holders[0]).ID(), wire.ProtoJobExplain, &wire.JobExplainRequest{Job: key}, wire.MaxExplainFrame, &resp); err == nil {
		t.Fatal("a client was answered an explanation")
	}
}
