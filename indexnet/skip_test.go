package indexnet_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestFindSkipping: a worker that names the jobs it will not take is
// never served them, and the entries it declines are served to the next
// worker at once, not held back for the quarantine; a plain Find holds a
// served entry back from everyone.
func TestFindSkipping(t *testing.T) {
	in := startIdxNet(t, 8, 43, testnet.Options{})
	keys := in.submit(t, in.project(t, "lhc"), 6, rand.New(rand.NewPCG(43, 43)))
	alice, bob := in.client(t, "alice"), in.client(t, "bob")
	ctx := context.Background()

	// Alice skips all but one job: she is served that one only.
	skip := append([][]byte(nil), keys[:5]...)
	hits, _, err := alice.Index().FindSkipping(ctx, "lhc", 6, indexclient.Skipping{Skip: skip})
	if err != nil || len(hits) != 1 || string(hits[0].Job) != string(keys[5]) {
		t.Fatalf("skipping 5 of 6: served %d entries, %v; want the sixth only", len(hits), err)
	}
	if _, _, err := alice.Index().FindSkipping(ctx, "lhc", 6, indexclient.Skipping{Skip: skip}); !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatalf("skipping 5 of 6, the sixth quarantined: %v, want no job", err)
	}

	// Bob is served everything left; declined, the entries are served
	// again at once, where a plain Find finds them quarantined.
	got, at, err := bob.Index().FindSkipping(ctx, "lhc", 6, indexclient.Skipping{})
	if err != nil || len(got) != 5 {
		t.Fatalf("bob: served %d entries, %v; want the 5 alice skipped", len(got), err)
	}
	if _, err := alice.Index().Find(ctx, "lhc", 6); !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatalf("all served, a plain Find: %v, want no job", err)
	}
	var declined [][]byte
	for _, h := range got {
		declined = append(declined, h.Job)
	}
	again, _, err := bob.Index().FindSkipping(ctx, "lhc", 6, indexclient.Skipping{Decline: declined, Node: at})
	if !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatalf("bob, declining what he was served: %d entries, %v; want none served to him", len(again), err)
	}
	back, err := alice.Index().Find(ctx, "lhc", 6)
	if err != nil || len(back) != 5 {
		t.Fatalf("after bob declined: alice served %d entries, %v; want the 5 declined", len(back), err)
	}

	// Too many to skip is refused before anything is sent.
	many := make([][]byte, wire.MaxQuerySkips+1)
	for i := range many {
		many[i] = keys[0]
	}
	if _, _, err := alice.Index().FindSkipping(ctx, "lhc", 1, indexclient.Skipping{Skip: many}); err == nil {
		t.Fatal("a query skipping too many jobs was sent")
	}
}

// TestFindSkippingOldNodes: at nodes that do not serve the skipping query
// (an older version), FindSkipping asks the plain query instead, and
// after the first refusal asks them the plain query directly.
func TestFindSkippingOldNodes(t *testing.T) {
	in := startIdxNet(t, 8, 44, testnet.Options{})
	keys := in.submit(t, in.project(t, "lhc"), 4, rand.New(rand.NewPCG(44, 44)))
	for _, nd := range in.net.Live() {
		nd.Endpoint().Handle(wire.ProtoIndexQuerySkip, wire.MaxQuerySkipFrame, nil,
			func(context.Context, *overlay.Admitted, []byte) (any, error) {
				return nil, overlay.StatusErr(wire.StatusNotFound, errors.New("protocol "+wire.ProtoIndexQuerySkip+" not served"))
			})
	}
	alice := in.client(t, "alice")
	ctx := context.Background()
	for i := range 2 {
		hits, _, err := alice.Index().FindSkipping(ctx, "lhc", 1, indexclient.Skipping{Skip: keys[:1]})
		if err != nil || len(hits) != 1 {
			t.Fatalf("find %d at old nodes: %d entries, %v; want one", i+1, len(hits), err)
		}
	}
	asked := 0
	for _, nd := range in.net.Live() {
		asked += int(overlay.SumCounter(nd.Endpoint().Metrics().RPCReceived, "protocol", wire.ProtoIndexQuerySkip))
	}
	if asked != 1 {
		t.Fatalf("old nodes were asked the skipping query %d times, want once", asked)
	}
}
