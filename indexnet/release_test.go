package indexnet_test

import (
	"context"
	"crypto/ed25519"
	"math/rand/v2"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestClaimWithdrawsAnotherAuthorsEntry: an entry another node wrote
// since (one nearer the job, so its author now) is kept against its old
// writer's plain withdrawal (the writer no longer takes itself for the
// job's closest), but removed by the withdrawal its claim calls for, or
// the claimed job would stay listed; given back, the job is listed and
// served again at once.
func TestClaimWithdrawsAnotherAuthorsEntry(t *testing.T) {
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
	// has not got the job yet), rewrites the entry and becomes its author.
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
	if n := idx.Withdraw(writer, []wire.IndexRef{{Keyword: "lhc", Job: key}}); n != 0 || !idx.Has("lhc", key) {
		t.Fatalf("the old writer's plain withdrawal removed %d entries; the new author's entry must stay", n)
	}

	in.claimEverywhere(t, key, "c")
	in.net.FlushAll(ctx)
	if idx.Has("lhc", key) {
		t.Fatal("the claimed job is still listed: its writer's withdrawal was refused")
	}
	// The claim is given back everywhere (a tombstone alone is another
	// node's word, which a replica holding the live claim keeps out).
	claimed, _ := in.net.Node(in.net.Holders(key)[0]).Pool().State(key)
	released, _ := claim.Release(claimed, claimed.Client, in.clock.Now().UnixMilli())
	for _, i := range in.net.Holders(key) {
		if _, err := in.net.Node(i).Pool().Apply(key, released); err != nil {
			t.Fatal(err)
		}
	}
	in.net.FlushAll(ctx)
	h := in.entryHolders("lhc", key)
	if len(h) != 1 {
		t.Fatalf("released job listed on %v", h)
	}
	if resp, err := in.net.Node(h[0]).Index().Query(selectOne); err != nil || len(resp.Hits) != 1 {
		t.Fatalf("released job not served: %v, %v", resp, err)
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
