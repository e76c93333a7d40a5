package indexnet_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/up-pool/up/testnet"
)

// TestBackupListerListsWhatTheClosestHides: a job's closest node keeps
// nothing and lists nothing (it acknowledged the store and dropped the
// job, or lies), so no index node lists the job. The next closest, a
// backup lister, lists it once it has seen the job ready for BackupDelay,
// and not before.
func TestBackupListerListsWhatTheClosestHides(t *testing.T) {
	in := startIdxNet(t, 12, 83, testnet.Options{})
	rng := rand.New(rand.NewPCG(83, 83))
	keys := in.submit(t, in.project(t, "lhc"), 10, rng)
	ctx := context.Background()
	key := keys[0]
	closest := in.net.Index(in.net.TrueClosest(key, 1)[0])
	if err := in.net.Node(closest).Pool().Forget(key); err != nil {
		t.Fatal(err)
	}
	in.net.FlushAll(ctx) // the closest withdraws what it wrote
	listed := func() int {
		n := 0
		for _, kw := range in.jobs[string(key)] {
			if len(in.entryHolders(kw, key)) > 0 {
				n++
			}
		}
		return n
	}
	if n := listed(); n != 0 {
		t.Fatalf("the job is still listed under %d keywords after its closest dropped it", n)
	}
	in.net.WriteAll(ctx) // the backup starts its wait
	in.clock.Advance(10*time.Minute - time.Second)
	in.net.WriteAll(ctx)
	if n := listed(); n != 0 {
		t.Fatalf("listed under %d keywords before BackupDelay", n)
	}
	in.clock.Advance(2 * time.Second)
	in.net.WriteAll(ctx)
	if n, want := listed(), len(in.jobs[string(key)]); n != want {
		t.Fatalf("after BackupDelay the job is listed under %d of its %d keywords", n, want)
	}
}
