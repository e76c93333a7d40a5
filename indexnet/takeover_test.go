package indexnet_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestWriterTakeover: the node that writes a job's entries (its closest)
// dies and its entries expire; after one republish round and one writer
// round the next closest node lists the job again under every keyword, on
// live index nodes.
func TestWriterTakeover(t *testing.T) {
	in := startIdxNet(t, 16, 49, testnet.Options{})
	rng := rand.New(rand.NewPCG(49, 49))
	keys := in.submit(t, in.project(t, "lhc"), 20, rng)
	ctx := context.Background()

	// A job whose writer holds none of its entries itself, so that every
	// entry outlives the writer until it expires.
	victim, writer := []byte(nil), -1
	for _, k := range keys {
		w := in.net.Index(in.net.TrueClosest(k, 1)[0])
		own := false
		for _, kw := range in.jobs[string(k)] {
			h := in.entryHolders(kw, k)
			if len(h) != 1 {
				t.Fatalf("job %x listed under %q on %v, want one index node", k[len(k)-4:], kw, h)
			}
			own = own || h[0] == w
		}
		if !own {
			victim, writer = k, w
			break
		}
	}
	if victim == nil {
		t.Fatal("every job's writer holds one of its entries")
	}
	kws := in.jobs[string(victim)]
	if err := in.net.Kill(writer); err != nil {
		t.Fatal(err)
	}
	next := in.net.TrueClosest(victim, 1)[0]

	// The dead writer's entries are not rewritten: they expire.
	in.clock.Advance(16*time.Minute + time.Second)
	for _, nd := range in.net.Live() {
		nd.Index().Expire()
	}
	for _, kw := range kws {
		if h := in.entryHolders(kw, victim); len(h) != 0 {
			t.Fatalf("job still listed under %q on %v after expiry", kw, h)
		}
	}

	rs := in.net.RepublishAll(ctx)
	ws := in.net.WriteAll(ctx)
	t.Logf("writer %d killed; republish %+v; writer round %+v", writer, rs, ws)
	refs := make([]wire.IndexRef, len(kws))
	for i, kw := range kws {
		h := in.entryHolders(kw, victim)
		if len(h) != 1 || h[0] == writer {
			t.Fatalf("job listed under %q on %v after the takeover, want one live index node", kw, h)
		}
		refs[i] = wire.IndexRef{Keyword: kw, Job: victim}
	}
	// The entries' writer is the next closest node: only a withdrawal in
	// its name removes them.
	removed := 0
	for _, nd := range in.net.Live() {
		removed += nd.Index().Withdraw(next, refs)
	}
	if removed != len(kws) {
		t.Fatalf("node %d (the next closest) wrote %d of the job's %d entries", in.net.Index(next), removed, len(kws))
	}
}
