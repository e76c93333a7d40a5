package pool_test

import (
	"context"
	"testing"

	"github.com/up-pool/up/job"
)

// TestHandOffSendsProofs: a node that hands its jobs on (Spread, as when
// it moves or leaves) sends each state with its proof. Before, the
// hand-off sent the bare state: every receiver refused a collected job's
// state and kept evidence against an honest node (found by the adversarial
// harness: "node023 sent collected … without the project's signature").
func TestHandOffSendsProofs(t *testing.T) {
	pn := startPoolNet(t, 8, 2, 173)
	key := pn.keys[0]
	holders := pn.net.Holders(key)
	if len(holders) < 2 {
		t.Fatalf("job held by %v", holders)
	}
	src := holders[0]
	st, proof := pn.collected(key, pn.clock.Now().UnixMilli())
	pn.merge(t, src, key, st, proof, nil)
	pn.net.Node(src).Pool().Spread(context.Background(), [][]byte{key}, false)
	pn.quiesce()
	for _, nd := range pn.net.Live() {
		for _, ev := range nd.Pool().Evidence() {
			t.Errorf("node %s kept evidence against %s (%s): %s", nd.ID(), ev.Sender, ev.Phase, ev.Reason)
		}
	}
	for _, h := range pn.net.Holders(key) {
		if got, _ := pn.net.Node(h).Pool().State(key); got.Phase != job.Collected {
			t.Errorf("node %d holds the job %s after the hand-off, want collected", h, got.Phase)
		}
	}
}
