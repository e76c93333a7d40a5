package indexnet_test

import (
	"context"
	"crypto/ed25519"
	"math/rand/v2"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestIndexExplain: the index node that served a job answers that it
// lists it, served it once and took the client's decline with its reason,
// attributed to the client, and counts the queries for the keyword; a
// keyword never queried answers none, and a client may not ask.
func TestIndexExplain(t *testing.T) {
	in := startIdxNet(t, 8, 45, testnet.Options{})
	keys := in.submit(t, in.project(t, "lhc"), 1, rand.New(rand.NewPCG(45, 45)))
	proj := in.project(t, "atlas")
	bob := in.client(t, "bob")
	ctx := context.Background()
	var bobAt peer.ID
	ask := func(kw string) *wire.IndexExplainResponse {
		t.Helper()
		var resp wire.IndexExplainResponse
		if err := proj.Agent().Endpoint().Call(ctx, bobAt, wire.ProtoIndexExplain, &wire.IndexExplainRequest{Keyword: kw, Job: keys[0]}, wire.MaxExplainFrame, &resp); err != nil {
			t.Fatalf("explain %q: %v", kw, err)
		}
		return &resp
	}
	got, at, err := bob.Index().FindSkipping(ctx, "lhc", 1, indexclient.Skipping{})
	if err != nil || len(got) != 1 {
		t.Fatalf("bob served %d entries, %v", len(got), err)
	}
	bobAt = at
	if r := ask("lhc"); !r.Listed || !r.Quarantined || r.Served != 1 || r.Queries != 1 || r.LastQueryMS < 0 || r.Declines != 0 {
		t.Fatalf("after one serve: %+v, want listed, quarantined, served once, one query", r)
	}
	_, _, _ = bob.Index().FindSkipping(ctx, "lhc", 1, indexclient.Skipping{Decline: [][]byte{keys[0]}, Node: at,
		Reasons: []wire.SkipReason{wire.SkipSameUnit}})
	r := ask("lhc")
	if r.Quarantined || r.Declines != 1 || len(r.Notes) != 1 || r.Notes[0].Reason != wire.SkipSameUnit ||
		string(r.Notes[0].Client) != string(bob.Identity().Key.Public().(ed25519.PublicKey)) {
		t.Fatalf("after bob's decline: %+v, want one decline for the same unit by bob, quarantine ended", r)
	}
	if r := ask("never"); r.Listed || r.Queries != 0 || r.LastQueryMS != -1 {
		t.Fatalf("keyword never queried: %+v", r)
	}
	var resp wire.IndexExplainResponse
	if err := bob.Endpoint().Call(ctx, at, wire.ProtoIndexExplain, &wire.IndexExplainRequest{Keyword: "lhc", Job: keys[0]}, wire.MaxExplainFrame, &resp); err == nil {
		t.Fatal("a client was answered an explanation")
	}
}
