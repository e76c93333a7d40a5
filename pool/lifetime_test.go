package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/job"
)

// TestNoResurrectionAfterLongDowntime: a replica that was off for longer
// than T_collect + GoneKeep comes back holding its old ready copy of a job
// the others collected and deleted. Its republish must not bring the job
// back as ready: the others remember the deleted key until the job's
// project-signed expiry, and the stale replica learns it was collected.
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
		if _, err := pn.net.Node(i).Pool().Apply(key, job.State{Phase: job.Collected, At: now}); err != nil {
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
	if st, ok := pn.net.Node(stale).Pool().State(key); !ok || st.Phase != job.Ready {
		t.Fatalf("restarted stale replica holds %v (held %v), want its old ready copy", st.Phase, ok)
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
