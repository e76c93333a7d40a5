package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/pool"
)

// tSkew is the pools' default T_skew.
const tSkew = time.Duration(claim.DefaultTSkew) * time.Millisecond

// TestExpiry: a claim lapses T_skew (20 min) after its deadline (T_finish)
// and the job is ready again; a collected job is deleted T_collect after
// collection.
func TestExpiry(t *testing.T) {
	pn := startPoolNet(t, 6, 20, 28)
	nd := pn.net.Node(0)
	keys := nd.Pool().Keys()
	if len(keys) < 2 {
		t.Fatalf("node holds %d jobs", len(keys))
	}
	now := pn.clock.Now().UnixMilli()
	claimed, collected := keys[0], keys[1]
	h, _ := nd.Pool().Lookup(claimed)
	if _, err := nd.Pool().Apply(claimed, job.State{Phase: job.Claimed, Client: []byte("c"), Start: now, Deadline: now + h.TFinish}); err != nil {
		t.Fatal(err)
	}
	if _, err := nd.Pool().Merge(collected, job.State{Phase: job.Collected, At: now}, pn.collectedProof(collected, now), nil); err != nil {
		t.Fatal(err)
	}
	// The collected state reaches every replica within two periods (to the
	// closest, then from it; the project also tells all r nodes itself);
	// T_collect is what lets it win.
	pn.net.RepublishAll(context.Background())
	pn.net.RepublishAll(context.Background())
	for _, i := range pn.net.Holders(collected) {
		if st, _ := pn.net.Node(i).Pool().State(collected); st.Phase != job.Collected {
			t.Fatalf("node %d holds the collected job as %s", i, st.Phase)
		}
	}
	if lapsed, deleted := nd.Pool().ExpireNow(); lapsed != 0 || deleted != 0 {
		t.Fatalf("expired early: %d lapsed, %d deleted", lapsed, deleted)
	}
	pn.clock.Advance(time.Duration(h.TFinish)*time.Millisecond + tSkew)
	if lapsed, _ := nd.Pool().ExpireNow(); lapsed != 1 {
		t.Fatalf("%d claims lapsed T_skew after the deadline, want 1", lapsed)
	}
	if st, _ := nd.Pool().State(claimed); st.Phase != job.Ready {
		t.Fatalf("lapsed claim is %s", st.Phase)
	}
	pn.clock.Advance(2 * time.Hour)
	if _, deleted := nd.Pool().ExpireNow(); deleted != 1 {
		t.Fatalf("%d collected jobs deleted after T_collect, want 1", deleted)
	}
	if _, ok := nd.Pool().State(collected); ok {
		t.Fatal("collected job still held after T_collect")
	}
	// The rest of its replicas expire the same way; nothing resurrects it.
	for _, other := range pn.net.Live() {
		other.Pool().ExpireNow()
	}
	pn.net.RepublishAll(context.Background())
	if h := pn.net.Holders(collected); len(h) != 0 {
		t.Fatalf("collected job back on %v", h)
	}
}

// TestNewNodeGetsJobs: a node that joins after submission receives the
// jobs it is now among the r closest of within one period; the nodes it
// displaced drop theirs after the replica expiry.
func TestNewNodeGetsJobs(t *testing.T) {
	pn := startPoolNet(t, 16, 0, 29)
	const late = 6
	if err := pn.net.Kill(late); err != nil {
		t.Fatal(err)
	}
	pn.keys = submit(t, pn.proj, 300)
	if err := pn.net.Restart(context.Background(), late); err != nil {
		t.Fatal(err)
	}
	if err := pn.net.Refill(); err != nil {
		t.Fatal(err)
	}
	if n := pn.net.Node(late).Pool().Len(); n != 0 {
		t.Fatalf("late node starts with %d jobs", n)
	}
	// The next round comes a republish period later. By then the dead
	// marks that the submission left on the late node (nodes that placed
	// jobs tried it while it was down; those its join's lookup reached
	// cleared theirs, the others wait out their backoff) have lapsed:
	// without the wait the round runs at the same instant and which nodes
	// sync to it depends on the lookup's timing (a CI run handed it 15
	// of its ~87 jobs).
	pn.clock.Advance(20 * time.Minute)
	st := pn.net.RepublishAll(context.Background())
	t.Logf("one round: %+v; late node now holds %d", st, pn.net.Node(late).Pool().Len())
	pn.checkPlacement(t, false)
	pn.clock.Advance(61 * time.Minute)
	pn.net.RepublishAll(context.Background())
	pn.checkPlacement(t, true)
}

// TestStaleReplicaAfterCollection: a replica that missed every state after
// ready (it was outside the claim's nodes and no republish reached it
// before T_collect) still holds the job as ready when the others delete
// it. A republish round must not store it on them again: they remember the
// collected job's key, answer its sync with the collected state, refuse to
// store it, and the stale replica deletes it too.
func TestStaleReplicaAfterCollection(t *testing.T) {
	pn := startPoolNet(t, 8, 10, 30)
	ctx := context.Background()
	key := pn.keys[0]
	holders := pn.net.Holders(key)
	if len(holders) != 5 {
		t.Fatalf("job on %d nodes", len(holders))
	}
	now := pn.clock.Now().UnixMilli()
	stale := holders[len(holders)-1]
	for _, i := range holders {
		if i == stale {
			continue
		}
		if _, err := pn.net.Node(i).Pool().Merge(key, job.State{Phase: job.Collected, At: now}, pn.collectedProof(key, now), nil); err != nil {
			t.Fatal(err)
		}
	}
	pn.clock.Advance(2*time.Hour + time.Minute)
	deleted := 0
	for _, nd := range pn.net.Live() {
		_, d := nd.Pool().ExpireNow()
		deleted += d
	}
	if deleted != 4 {
		t.Fatalf("%d replicas deleted after T_collect, want 4", deleted)
	}
	if h := pn.net.Holders(key); len(h) != 1 || h[0] != stale {
		t.Fatalf("after expiry the job is on %v, want only the stale node %d", h, stale)
	}
	pn.net.RepublishAll(ctx)
	if st, _ := pn.net.Node(stale).Pool().State(key); st.Phase != job.Collected {
		t.Fatalf("stale replica is %s after a republish round, want collected", st.Phase)
	}
	for _, i := range pn.net.Holders(key) {
		if i != stale {
			t.Fatalf("collected job stored again on node %d", i)
		}
	}
	if _, d := pn.net.Node(stale).Pool().ExpireNow(); d != 1 {
		t.Fatalf("stale replica: %d deleted, want 1", d)
	}
	pn.net.RepublishAll(ctx)
	if h := pn.net.Holders(key); len(h) != 0 {
		t.Fatalf("collected job back on %v", h)
	}
}

// TestExpiryInBatches: an expiry pass deletes collected jobs in commits
// of several jobs each (expireBatch); every one of them is deleted, has
// its gone record, and stays deleted across a restart of the node.
func TestExpiryInBatches(t *testing.T) {
	defer pool.SetExpireBatchForTests(pool.SetExpireBatchForTests(3))
	pn := startPoolNet(t, 6, 30, 29)
	nd := pn.net.Node(0)
	keys := nd.Pool().Keys()
	if len(keys) < 7 {
		t.Fatalf("node holds %d jobs, want several batches' worth", len(keys))
	}
	now := pn.clock.Now().UnixMilli()
	for _, k := range keys {
		if _, err := nd.Pool().Merge(k, job.State{Phase: job.Collected, At: now}, pn.collectedProof(k, now), nil); err != nil {
			t.Fatal(err)
		}
	}
	pn.clock.Advance(2*time.Hour + time.Minute)
	if _, deleted := nd.Pool().ExpireNow(); deleted != len(keys) {
		t.Fatalf("%d of %d collected jobs deleted after T_collect", deleted, len(keys))
	}
	check := func(when string) {
		t.Helper()
		p := pn.net.Node(0).Pool()
		at := pn.clock.Now().UnixMilli()
		for _, k := range keys {
			if _, held := p.State(k); held {
				t.Fatalf("%s: job %x still held", when, k)
			}
			if !p.GoneForTests(k, at) {
				t.Fatalf("%s: job %x has no gone record", when, k)
			}
		}
	}
	check("after the pass")
	if err := pn.net.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := pn.net.Restart(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	check("after a restart")
}
