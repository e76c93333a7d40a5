package indexnet_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/up-pool/up/testnet"
)

// TestRestartedWriterWithdraws: a job's writer goes down and the job is
// claimed meanwhile; restarted, the writer reads back where it placed
// the job's entry and withdraws it, so the index stops serving a claimed
// job. Control: a writer that forgets its placements leaves the entry at
// its index node, an orphan served until it expires.
func TestRestartedWriterWithdraws(t *testing.T) {
	for _, forget := range []bool{false, true} {
		opts := testnet.Options{}
		opts.IndexWriter.ForgetPlacements = forget
		in := startIdxNet(t, 8, 52, opts)
		rng := rand.New(rand.NewPCG(52, 52))
		keys := in.submit(t, in.project(t, "lhc"), 12, rng)
		ctx := context.Background()
		in.net.FlushAll(ctx)
		key, w, at := []byte(nil), -1, -1
		for _, k := range keys { // a job whose "lhc" entry is on another node than its writer
			for i := range in.net.Len() {
				placed := in.net.Node(i).Writer().Placed(k)["lhc"]
				if placed == "" {
					continue
				}
				if j := in.net.Index(placed); j != i && j >= 0 {
					key, w, at = k, i, j
				}
			}
			if key != nil {
				break
			}
		}
		if key == nil {
			t.Fatal("no job with its entry away from its writer")
		}
		if err := in.net.Kill(w); err != nil {
			t.Fatal(err)
		}
		in.claimEverywhere(t, key, "client1") // the live holders
		if err := in.net.Restart(ctx, w); err != nil {
			t.Fatal(err)
		}
		in.claimEverywhere(t, key, "client1") // the writer learns of the claim on its return
		in.net.FlushAll(ctx)
		held := in.entryHolders("lhc", key)
		t.Logf("forget %v: writer node %d, entry placed on node %d, held after the restart by %v", forget, w, at, held)
		switch {
		case !forget && len(held) != 0:
			t.Fatalf("the restarted writer left the claimed job's entry on nodes %v", held)
		case forget && len(held) == 0:
			t.Fatal("control: a writer that forgets its placements withdrew the entry all the same")
		}
	}
}
