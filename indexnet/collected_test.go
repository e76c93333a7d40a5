package indexnet_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestCollectedNotHarvestedAgain: the index node that held a region's
// finished entries dies, the writers place them on the next nearest,
// and it comes back; the writers' next rewrite follows the redirect back
// to it. Once the jobs are collected, a harvest finds none of them: the
// node that redirected the rewrites keeps no copy that would outlive the
// withdrawal until it expires.
func TestCollectedNotHarvestedAgain(t *testing.T) {
	opts := testnet.Options{}
	opts.Index.RegionBits = 16 // 1/65536 of the keyspace: no node of 8 inside
	in := startIdxNet(t, 8, 45, opts)
	rng := rand.New(rand.NewPCG(45, 45))
	keys := in.submit(t, in.project(t, "lhc"), 20, rng)
	ctx := context.Background()
	in.finishEverywhere(t, keys)
	in.net.FlushAll(ctx)
	kw := job.FinishedKeyword("lhc")
	first := in.finishedHolders(kw)
	if len(first) != 1 {
		t.Fatalf("finished entries on nodes %v, want the one nearest the region", first)
	}
	if err := in.net.Kill(first[0]); err != nil {
		t.Fatal(err)
	}
	in.clock.Advance(15*time.Minute + time.Second)
	in.net.WriteAll(ctx)
	if err := in.net.Restart(ctx, first[0]); err != nil {
		t.Fatal(err)
	}
	in.clock.Advance(15*time.Minute + time.Second)
	in.net.WriteAll(ctx)
	t.Logf("finished entries on nodes %v, then %v", first, in.finishedHolders(kw))

	now := in.clock.Now().UnixMilli()
	for _, k := range keys {
		for _, h := range in.net.Holders(k) {
			if _, err := in.net.Node(h).Pool().Apply(k, job.State{Phase: job.Collected, At: now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	in.net.FlushAll(ctx)
	found := 0
	_, err := in.client(t, "harvester").Index().Harvest(ctx, kw, 50, func(hits []wire.IndexHit) error {
		found += len(hits)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != 0 {
		t.Fatalf("a harvest after collection finds %d of %d collected jobs (entries on nodes %v)", found, len(keys), in.finishedHolders(kw))
	}
}

// finishedHolders lists the running nodes holding entries under kw.
func (in *idxNet) finishedHolders(kw string) []int {
	var at []int
	for i := range in.net.Len() {
		if nd := in.net.Node(i); nd != nil && nd.Index().Keywords()[kw] > 0 {
			at = append(at, i)
		}
	}
	return at
}
