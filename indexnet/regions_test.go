package indexnet_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/indexnet"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// trueClosest is the running node closest to x, from all positions.
func (in *idxNet) trueClosest(x keyspace.Pos) peer.ID {
	var ids []peer.ID
	for id := range in.net.Positions() {
		ids = append(ids, id)
	}
	dht.SortPeers(x, ids)
	return ids[0]
}

// wantAsked is the nodes a Find asks for its points, in order: the
// running node closest to each point among those not asked yet.
func (in *idxNet) wantAsked(points ...keyspace.Pos) []peer.ID {
	var out []peer.ID
	asked := map[peer.ID]bool{}
	for _, x := range points {
		var ids []peer.ID
		for id := range in.net.Positions() {
			if !asked[id] {
				ids = append(ids, id)
			}
		}
		dht.SortPeers(x, ids)
		asked[ids[0]] = true
		out = append(out, ids[0])
	}
	return out
}

// queriesReceived counts the index queries each running node answered.
func (in *idxNet) queriesReceived() map[peer.ID]float64 {
	out := map[peer.ID]float64{}
	for _, nd := range in.net.Live() {
		out[nd.ID()] = overlay.SumCounter(nd.Endpoint().Metrics().RPCReceived, "protocol", wire.ProtoIndexQuery)
	}
	return out
}

// askedSince lists the nodes that answered queries since before, each as
// many times as it answered.
func (in *idxNet) askedSince(before map[peer.ID]float64) map[peer.ID]int {
	out := map[peer.ID]int{}
	for id, n := range in.queriesReceived() {
		if d := int(n - before[id]); d != 0 {
			out[id] = d
		}
	}
	return out
}

// seededFinder is an index client of agent a whose random points replay:
// its twin region cache, seeded alike, draws the same points in order.
func seededFinder(a *agent.Agent, bits int, seed uint64, now func() time.Time) (finder *indexclient.Client, twin *indexclient.Regions) {
	regions := indexclient.NewRegions(a.DHT(), bits, time.Hour, seed, now)
	return indexclient.NewClient(a.DHT(), regions, nil, 3), indexclient.NewRegions(a.DHT(), bits, time.Hour, seed, now)
}

// sameAsked compares the nodes asked with those expected, as multisets.
func sameAsked(asked map[peer.ID]int, want []peer.ID) bool {
	w := map[peer.ID]int{}
	for _, p := range want {
		w[p]++
	}
	if len(w) != len(asked) {
		return false
	}
	for p, n := range w {
		if asked[p] != n {
			return false
		}
	}
	return true
}

// TestFindRetries: Find asks the node closest to a fresh random point of
// the region while nothing is found: a first point whose node holds
// nothing, then a second whose node holds the job, which is returned; with
// the job quarantined, all three points are asked before ErrNoJob.
func TestFindRetries(t *testing.T) {
	const bits = 2 // a quarter of the keyspace: several nodes share the region
	opts := testnet.Options{Index: indexnet.Config{Config: indexclient.Config{RegionBits: bits}}}
	in := startIdxNet(t, 16, 50, opts)
	rng := rand.New(rand.NewPCG(50, 50))
	key := in.submit(t, in.project(t, "lhc"), 1, rng)[0]
	holder := in.entryHolders("lhc", key)
	if len(holder) != 1 {
		t.Fatalf("job listed on %v, want one index node", holder)
	}
	holderID := in.net.Node(holder[0]).ID()
	a := in.client(t, "worker")

	// A seed whose first point falls to another node, its second to the
	// holder.
	var seed uint64
	for s := uint64(1); s < 1000 && seed == 0; s++ {
		twin := indexclient.NewRegions(a.DHT(), bits, time.Hour, s, in.clock.Now)
		twin.RandomPoint("lhc") // where the region view's walk goes
		x1, x2 := twin.RandomPoint("lhc"), twin.RandomPoint("lhc")
		if in.trueClosest(x1) != holderID && in.trueClosest(x2) == holderID {
			seed = s
		}
	}
	if seed == 0 {
		t.Fatal("no seed puts the first point off the holder and the second on it")
	}
	finder, twin := seededFinder(a, bits, seed, in.clock.Now)
	twin.RandomPoint("lhc") // where the region view's walk goes
	x1, x2 := twin.RandomPoint("lhc"), twin.RandomPoint("lhc")
	ctx := context.Background()

	before := in.queriesReceived()
	hits, err := finder.Find(ctx, "lhc", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || string(hits[0].Job) != string(key) {
		t.Fatalf("found %d hits, want the one job", len(hits))
	}
	asked := in.askedSince(before)
	if want := in.wantAsked(x1, x2); !sameAsked(asked, want) {
		t.Fatalf("asked %v, want the node closest to the first point and then the holder %v", asked, want)
	}

	// The job is quarantined: every point is tried, then no job.
	want := in.wantAsked(twin.RandomPoint("lhc"), twin.RandomPoint("lhc"), twin.RandomPoint("lhc"))
	before = in.queriesReceived()
	if _, err := finder.Find(ctx, "lhc", 1); !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatalf("find of a quarantined job: %v, want ErrNoJob", err)
	}
	if asked := in.askedSince(before); !sameAsked(asked, want) {
		t.Fatalf("asked %v before reporting no job, want the nodes closest to three points %v", asked, want)
	}
}

// TestCrowdedRegion: a region holding more nodes than a near answer (p = 1
// on 64 nodes: about 32) is crowded; Target and Find still use the node
// truly closest to each random point, at the cost of near RPCs that the
// sub-regions learnt in full keep below one per point. An uncrowded
// region costs no near RPC beyond the view's first.
func TestCrowdedRegion(t *testing.T) {
	const bits = 1
	in := startIdxNet(t, 64, 51, testnet.Options{Index: indexnet.Config{Config: indexclient.Config{RegionBits: bits}}})
	a := in.client(t, "worker")
	ctx := context.Background()
	region := keyspace.IndexRegion("lhc", bits)
	inside := 0
	for _, pos := range in.net.Positions() {
		if region.Contains(pos) {
			inside++
		}
	}
	if inside <= 20 {
		t.Fatalf("%d nodes in the region: not crowded", inside)
	}
	nearSent := func() float64 {
		return overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", wire.ProtoNear)
	}

	const points = 60
	regions := indexclient.NewRegions(a.DHT(), bits, time.Hour, 51, in.clock.Now)
	near0 := nearSent()
	for i := range points {
		x, at, err := regions.Target(ctx, "lhc")
		if err != nil {
			t.Fatal(err)
		}
		if want := in.trueClosest(x); at != want {
			t.Fatalf("point %d (%s): target %s, the closest is %s", i, x.Short(), at, want)
		}
	}
	near := nearSent() - near0
	t.Logf("%d nodes in the region; %d points, %.0f near RPCs", inside, points, near)
	if near < 2 || near >= points {
		t.Fatalf("%.0f near RPCs for %d points in a crowded region: want more than the view's one, fewer than one per point", near, points)
	}

	// Find asks the node closest to each of its points (nothing is listed,
	// so each Find tries all three).
	finder, twin := seededFinder(a, bits, 52, in.clock.Now)
	twin.RandomPoint("lhc") // where the region view's walk goes
	for i := range 10 {
		want := in.wantAsked(twin.RandomPoint("lhc"), twin.RandomPoint("lhc"), twin.RandomPoint("lhc"))
		before := in.queriesReceived()
		if _, err := finder.Find(ctx, "lhc", 1); !errors.Is(err, indexclient.ErrNoJob) {
			t.Fatalf("find %d in an empty index: %v, want ErrNoJob", i, err)
		}
		if asked := in.askedSince(before); !sameAsked(asked, want) {
			t.Fatalf("find %d asked %v, want the nodes closest to its points %v", i, asked, want)
		}
	}

	// A region of the default p holds no more nodes than an answer: no
	// near RPC beyond the view's.
	plain := indexclient.NewRegions(a.DHT(), indexclient.DefaultRegionBits, time.Hour, 53, in.clock.Now)
	near0, walked0 := nearSent(), a.DHT().WalkStats().RPCs
	for i := range points {
		x, at, err := plain.Target(ctx, "lhc")
		if err != nil {
			t.Fatal(err)
		}
		if want := in.trueClosest(x); at != want {
			t.Fatalf("uncrowded point %d (%s): target %s, the closest is %s", i, x.Short(), at, want)
		}
	}
	// The view is a walk of a few near questions, and nothing more.
	walked := float64(a.DHT().WalkStats().RPCs - walked0)
	if near := nearSent() - near0; near != walked || walked < 1 {
		t.Fatalf("%.0f near RPCs for %d points in an uncrowded region, %.0f of them by the view's walk: want only the walk's", near, points, walked)
	}
}

// TestRegionsConcurrent: Regions, the shell of index.RegionViews, serves
// targets from many goroutines while views are dropped (Invalidate,
// Stale) under them: every target is a running node (run with -race).
func TestRegionsConcurrent(t *testing.T) {
	const bits = 1 // about 24 of 48 nodes in the region: crowded
	in := startIdxNet(t, 48, 54, testnet.Options{Index: indexnet.Config{Config: indexclient.Config{RegionBits: bits}}})
	a := in.client(t, "worker")
	running := map[peer.ID]bool{}
	var ids []peer.ID
	for id := range in.net.Positions() {
		running[id] = true
		ids = append(ids, id)
	}
	regions := indexclient.NewRegions(a.DHT(), bits, time.Hour, 54, in.clock.Now)
	ctx := context.Background()
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 20 {
				kw := []string{"lhc", "atlas"}[(g+i)%2]
				switch i % 7 {
				case 3:
					regions.Invalidate(kw)
				case 5:
					regions.Stale(kw, 0)
				}
				_, at, err := regions.TargetAvoiding(ctx, kw, map[peer.ID]bool{ids[(g*7+i)%len(ids)]: true})
				if err == nil && !running[at] {
					err = fmt.Errorf("target %s is no running node", at)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
