package indexnet_test

import (
	"context"
	"crypto/ed25519"
	"math/rand/v2"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
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
	// Another node, nearer the job than its writer (one that joined and
	// has not got the job yet), rewrites the entry: the job's writer's
	// withdrawal is refused from now on.
	e, _ := idx.Entry("lhc", key)
	writer := in.net.TrueClosest(key, 1)[0]
	if e.Writer != string(writer) {
		t.Fatalf("entry written by %s, not the job's closest node %s", peer.ID(e.Writer), writer)
	}
	other := nearerPeer(t, key, writer, rng)
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

// nearerPeer returns a new peer ID nearer job key than peer p.
func nearerPeer(t *testing.T, key []byte, p peer.ID, rng *rand.Rand) peer.ID {
	t.Helper()
	pos, than := keyspace.KeyPos(key), keyspace.PeerPos([]byte(p))
	for range 10_000 {
		seed := make([]byte, ed25519.SeedSize)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		pub, err := crypto.UnmarshalEd25519PublicKey(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		if keyspace.CloserTo(pos, keyspace.PeerPos([]byte(id)), than) {
			return id
		}
	}
	t.Fatal("no peer ID nearer the job found")
	return ""
}
