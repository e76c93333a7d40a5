package indexnet_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestReleaseAfterRefusedWithdraw: a served, so quarantined, entry whose
// withdrawal its index node refused (another node wrote it last, as after a
// handoff) is released from quarantine when its job, claimed and given
// back, is written there again: otherwise the ready job stays hidden from
// every client for the whole quarantine.
func TestReleaseAfterRefusedWithdraw(t *testing.T) {
	in := startIdxNet(t, 8, 44, testnet.Options{})
	rng := rand.New(rand.NewPCG(44, 44))
	key := in.submit(t, in.project(t, "lhc"), 1, rng)[0]
	ctx := context.Background()
	at := in.entryHolders("lhc", key)
	if len(at) != 1 {
		t.Fatalf("job listed under lhc on %v", at)
	}
	idx := in.net.Node(at[0]).Index()
	selectOne := &wire.IndexQueryRequest{Query: "lhc", Keyword: "lhc", N: 1}
	if resp, err := idx.Query(selectOne); err != nil || len(resp.Hits) != 1 {
		t.Fatalf("first query: %v, %v", resp, err)
	}
	// Another node rewrites the entry: the job's writer's withdrawal is
	// refused from now on.
	e, _ := idx.Entry("lhc", key)
	holders := in.net.Holders(key)
	o := 0
	for slices.Contains(holders, o) || o == at[0] {
		o++
	}
	other := in.net.Node(o).ID() // not the job's writer, which is a holder
	res := idx.Write(other, []wire.IndexWrite{{Keyword: "lhc", Listing: e.Listing, Point: e.Point[:]}}, nil, false)
	if res[0].Status != wire.StatusOK {
		t.Fatalf("rewrite by another node: %+v", res[0])
	}

	in.claimEverywhere(t, key, "c")
	in.net.FlushAll(ctx)
	if resp, err := idx.Query(pageAll("lhc")); err != nil || len(resp.Hits) != 1 {
		t.Fatalf("the refused withdrawal removed the entry after all: %v, %v", resp, err)
	}
	// The claim is given back: the tombstone everywhere.
	claimed, _ := in.net.Node(in.net.Holders(key)[0]).Pool().State(key)
	released := job.State{Phase: job.Ready, Client: claimed.Client, Start: claimed.Start}
	for _, i := range in.net.Holders(key) {
		if _, err := in.net.Node(i).Pool().Apply(key, released); err != nil {
			t.Fatal(err)
		}
	}
	in.net.FlushAll(ctx)
	if h := in.entryHolders("lhc", key); len(h) != 1 || h[0] != at[0] {
		t.Fatalf("released job rewritten to %v; this case needs it back on node %d", h, at[0])
	}
	if resp, err := idx.Query(selectOne); err != nil || len(resp.Hits) != 1 {
		t.Fatalf("released job still quarantined: %v, %v", resp, err)
	}
}
