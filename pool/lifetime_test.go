package pool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/wire"
)

// TestNoResurrectionAfterLongDowntime: a replica that was off for longer
// than T_collect + GoneKeep comes back holding its old ready copy of a job
// the others collected and deleted. Its republish must not bring the job
// back as ready: the others remember the deleted key until the job's
// project-signed expiry, and the stale replica learns it was collected
// (at once: its catch-up round as it starts).
func TestNoResurrectionAfterLongDowntime(t *testing.T) {
	pn := startPoolNet(t, 8, 10, 31)
	ctx := context.Background()
	key := pn.keys[0]
	holders := pn.net.Holders(key)
	if len(holders) != 5 {
		t.Fatalf("job on %d nodes", len(holders))
	}
	stale := holders[len(holders)-1]
	if err := pn.net.Kill(stale); err != nil {
		t.Fatal(err)
	}
	now := pn.clock.Now().UnixMilli()
	for _, i := range holders[:len(holders)-1] {
		if _, err := pn.net.Node(i).Pool().Merge(key, job.State{Phase: job.Collected, At: now}, pn.collectedProof(key, now), nil); err != nil {
			t.Fatal(err)
		}
	}
	// T_collect (2 h) deletes the job; GoneKeep (2 h) more forgets it on
	// the code before job lifetimes.
	pn.clock.Advance(2*time.Hour + time.Minute)
	for _, nd := range pn.net.Live() {
		nd.Pool().ExpireNow()
	}
	pn.clock.Advance(2*time.Hour + time.Minute)
	for _, nd := range pn.net.Live() {
		nd.Pool().ExpireNow()
	}
	if h := pn.net.Holders(key); len(h) != 0 {
		t.Fatalf("collected job still on %v", h)
	}
	if err := pn.net.Restart(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if err := pn.net.Refill(); err != nil {
		t.Fatal(err)
	}
	// It catches up as it starts (pool.CatchUp): the others' answers
	// tell it the job was collected.
	if st, ok := pn.net.Node(stale).Pool().State(key); ok && st.Phase != job.Collected {
		t.Fatalf("restarted stale replica holds %v after its catch-up, want collected", st.Phase)
	}
	pn.net.RepublishAll(ctx)
	pn.net.RepublishAll(ctx)
	for _, i := range pn.net.Holders(key) {
		if st, _ := pn.net.Node(i).Pool().State(key); st.Phase == job.Ready {
			t.Fatalf("collected job back as ready on node %d (stale node %d)", i, stale)
		}
		if i != stale {
			t.Fatalf("collected job stored again on node %d", i)
		}
	}
}

// TestExpiredJobRefusedAndDropped: a job whose project-signed lifetime has
// passed (by the margin, on the node's own clock) is refused at store,
// from the project and from a node, and dropped by the nodes that hold it;
// not a minute before the margin ends.
func TestExpiredJobRefusedAndDropped(t *testing.T) {
	pn := startPoolNet(t, 8, 0, 32)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sign := func(created time.Time, lifetime time.Duration) *project.Prepared {
		spec, err := pn.proj.NewSpec("hashchain", nil, []string{"lhc"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		spec.Created, spec.Lifetime = created.UnixMilli(), lifetime.Milliseconds()
		s, err := pn.proj.Sign(spec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := pn.clock.Now()
	margin := time.Duration(job.ExpiryMarginMS) * time.Millisecond

	// Submitted expired: refused by the node the project sends it to.
	old := sign(now.Add(-3*time.Hour), 2*time.Hour)
	res := pn.proj.Submit(ctx, []*project.Prepared{old})
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "expired") {
		t.Fatalf("expired job submitted: acks %d, err %v", res[0].Acks, res[0].Err)
	}
	if h := pn.net.Holders(old.Key()); len(h) != 0 {
		t.Fatalf("expired job stored on %v", h)
	}

	// A live job: held until its expiry + margin, then dropped everywhere.
	live := sign(now, 2*time.Hour)
	if res := pn.proj.Submit(ctx, []*project.Prepared{live}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	holders := pn.net.Holders(live.Key())
	if len(holders) != 5 {
		t.Fatalf("job on %d nodes", len(holders))
	}
	env, err := pn.net.Node(holders[0]).Pool().Envelope(live.Key())
	if err != nil {
		t.Fatal(err)
	}
	pn.clock.Advance(2*time.Hour + margin - time.Minute)
	for _, nd := range pn.net.Live() {
		nd.Pool().ExpireNow()
	}
	pn.net.RepublishAll(ctx)
	if h := pn.net.Holders(live.Key()); len(h) != 5 {
		t.Fatalf("job dropped before its expiry + margin: held on %v", h)
	}
	pn.clock.Advance(2 * time.Minute)
	pn.net.RepublishAll(ctx)
	deleted := 0
	for _, nd := range pn.net.Live() {
		_, d := nd.Pool().ExpireNow()
		deleted += d
	}
	if h := pn.net.Holders(live.Key()); len(h) != 0 || deleted != 5 {
		t.Fatalf("expired job still on %v (%d deleted, want 5)", h, deleted)
	}

	// A node forwarding the expired job (a stale replica) is refused.
	req := &wire.StoreRequest{Jobs: []wire.JobEnvelope{env}, Certs: [][]byte{pn.proj.Agent().Identity().Cert.Raw}}
	var resp wire.StoreResponse
	from, to := pn.net.Node(holders[0]), pn.net.Node(holders[1])
	if err := from.Endpoint().Call(ctx, to.ID(), wire.ProtoJobStore, req, wire.MaxJobFrame, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Status != wire.StatusGone || !strings.Contains(resp.Results[0].Msg, "expired") {
		t.Fatalf("expired job forwarded by a node: %+v", resp.Results)
	}
	if h := pn.net.Holders(live.Key()); len(h) != 0 {
		t.Fatalf("expired job stored again on %v", h)
	}
}
