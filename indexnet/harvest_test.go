package indexnet_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestHarvest: finished entries spread over at least 3 nodes of their
// region; a harvest walks the region's nodes and returns 100 % of them,
// each once, in pages.
func TestHarvest(t *testing.T) {
	opts := testnet.Options{}
	opts.Index.RegionBits = 3 // 1/8 of the keyspace: a few of 32 nodes inside
	in := startIdxNet(t, 32, 44, opts)
	rng := rand.New(rand.NewPCG(44, 44))
	p := in.project(t, "lhc")
	keys := in.submit(t, p, 300, rng)
	ctx := context.Background()
	in.finishEverywhere(t, keys)
	in.net.FlushAll(ctx)
	kw := job.FinishedKeyword("lhc")
	region := keyspace.IndexRegion(kw, 3)
	holders := 0
	inside := 0
	for _, nd := range in.net.Live() {
		if region.Contains(nd.DHT().Self()) {
			inside++
		}
		if nd.Index().Keywords()[kw] > 0 {
			holders++
		}
	}
	t.Logf("region %s holds %d of 32 nodes; finished entries on %d nodes", region, inside, holders)
	if holders < 3 {
		t.Fatalf("finished entries on only %d nodes", holders)
	}
	seen := map[string]int{}
	st, err := p.Agent().Index().Harvest(ctx, kw, 50, func(hits []wire.IndexHit) error {
		for _, h := range hits {
			seen[string(h.Job)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("harvest: %+v", st)
	for _, k := range keys {
		if seen[string(k)] != 1 {
			t.Fatalf("job %x harvested %d times", k[len(k)-4:], seen[string(k)])
		}
	}
	if len(seen) != len(keys) {
		t.Fatalf("harvested %d entries, want %d", len(seen), len(keys))
	}
}

// TestHarvestPastDeadIndexNode: the node nearest an empty region held all
// its finished entries and died; the writers placed them anew on the next
// nearest. A party that does not know the node is dead (others' views
// still list it) harvests them all: the dead node is skipped and the
// region walked again without it.
func TestHarvestPastDeadIndexNode(t *testing.T) {
	opts := testnet.Options{}
	opts.Index.RegionBits = 16 // 1/65536 of the keyspace: no node of 8 inside
	in := startIdxNet(t, 8, 45, opts)
	rng := rand.New(rand.NewPCG(45, 45))
	keys := in.submit(t, in.project(t, "lhc"), 20, rng)
	ctx := context.Background()
	in.finishEverywhere(t, keys)
	in.net.FlushAll(ctx)
	kw := job.FinishedKeyword("lhc")
	var at []int
	for i, nd := range in.net.Live() {
		if nd.Index().Keywords()[kw] > 0 {
			at = append(at, i)
		}
	}
	if len(at) != 1 {
		t.Fatalf("finished entries on nodes %v, want the one nearest the region", at)
	}
	if err := in.net.Kill(at[0]); err != nil {
		t.Fatal(err)
	}
	// Every writer's next round finds the index node dead and places the
	// entries anew.
	in.clock.Advance(15*time.Minute + time.Second)
	in.net.WriteAll(ctx)
	harvester := in.client(t, "late-project")
	seen := map[string]int{}
	_, err := harvester.Index().Harvest(ctx, kw, 50, func(hits []wire.IndexHit) error {
		for _, h := range hits {
			seen[string(h.Job)]++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("harvest past the dead node: %v", err)
	}
	if len(seen) != len(keys) {
		t.Fatalf("harvested %d of %d finished entries", len(seen), len(keys))
	}
}

// finishEverywhere marks the jobs finished on all their replicas.
func (in *idxNet) finishEverywhere(t *testing.T, keys [][]byte) {
	t.Helper()
	now := in.clock.Now().UnixMilli()
	for i, k := range keys {
		st := job.State{Phase: job.Finished, Client: []byte("c"), At: now + int64(i), Result: []byte{1}}
		for _, h := range in.net.Holders(k) {
			if _, err := in.net.Node(h).Pool().Apply(k, st); err != nil {
				t.Fatal(err)
			}
		}
	}
}
