package claimnet_test

import (
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/job"
)

// TestRestartedNodeCatchesUp: the job's closest node (its index writer)
// is down while a client claims the job on the other replicas; when it
// restarts with the job still ready in its store, it exchanges the job's
// state with its fellow replicas before anything else (pool.CatchUp, in
// node.Start), so it holds the job claimed — the certificate came with the
// state — and its writer round lists the job nowhere. Before, the restarted
// node listed the job as ready at its writer's first tick and kept it
// listed until a republish round 20–30 min later, sending every client it
// was served to a claimed job (issue 24). The control kills every other
// replica before the restart, so there is nothing to catch up from: the
// node keeps the job ready and lists it, which the same checks see.
func TestRestartedNodeCatchesUp(t *testing.T) {
	for _, alone := range []bool{false, true} {
		cn := startClaimNet(t, 12, 1, 71)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		key := cn.keys[0]
		cn.net.WriteAll(ctx)
		w := cn.net.Index(cn.net.TrueClosest(key, 1)[0])
		env, err := cn.net.Node(w).Pool().Envelope(key)
		if err != nil {
			t.Fatal(err)
		}
		_, listing, err := job.DecodeListing(env.Listing)
		if err != nil {
			t.Fatal(err)
		}
		listed := func() (n int) {
			for _, nd := range cn.net.Live() {
				for _, kw := range listing.Keywords {
					if nd.Index().Has(kw, key) {
						n++
					}
				}
			}
			return n
		}
		if listed() == 0 {
			t.Fatal("the job is not listed before the claim")
		}
		if err := cn.net.Kill(w); err != nil {
			t.Fatal(err)
		}
		_, cl := cn.client(t, "w")
		if _, err := cl.Claim(ctx, key); err != nil {
			t.Fatalf("claim with the writer down: %v", err)
		}
		cn.net.WriteAll(ctx) // the next closest withdraws its listing
		if alone {
			for _, i := range cn.net.Holders(key) {
				if err := cn.net.Kill(i); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := cn.net.Restart(ctx, w); err != nil {
			t.Fatalf("restart: %v", err)
		}
		nd := cn.net.Node(w)
		st, _ := nd.Pool().State(key)
		if nd.Pool().Behind() {
			t.Fatal("the restarted pool is still behind after Start")
		}
		cn.net.WriteAll(ctx)
		n := listed()
		t.Logf("alone %v: restarted writer holds the job %v; listed %d times", alone, st.Phase, n)
		if alone {
			if st.Phase != job.Ready || n == 0 {
				t.Fatalf("control: with no replica to catch up from the job is %v and listed %d times, want ready and listed", st.Phase, n)
			}
			continue
		}
		if st.Phase != job.Claimed || n != 0 {
			t.Fatalf("restarted writer holds the job %v and it is listed %d times, want claimed and listed nowhere", st.Phase, n)
		}
	}
}
