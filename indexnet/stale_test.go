package indexnet_test

import (
	"context"
	"errors"
	"testing"

	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/testnet"
)

// TestEmptyFindRefreshesStaleView: a Find that finds nothing anywhere drops
// a region view at least MinEmptyRefresh old, so a client whose view
// predates the nodes holding the entries looks again (walks to the region
// anew); a younger view is kept (no walk per empty find).
func TestEmptyFindRefreshesStaleView(t *testing.T) {
	in := startIdxNet(t, 8, 52, testnet.Options{})
	a := in.client(t, "worker")
	ctx := context.Background()
	lookups := func() int64 { return a.DHT().WalkStats().Walks } // a view is a walk and a near question

	if _, err := a.Index().Find(ctx, "nothing-here", 1); !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatalf("find on an empty keyword: %v", err)
	}
	first := lookups()
	if first == 0 {
		t.Fatal("the first find made no lookup")
	}
	in.clock.Advance(indexclient.MinEmptyRefresh / 2)
	if _, err := a.Index().Find(ctx, "nothing-here", 1); !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatal(err)
	}
	if got := lookups(); got != first {
		t.Fatalf("a young view was looked up again: %d lookups, want %d", got, first)
	}
	in.clock.Advance(indexclient.MinEmptyRefresh)
	if _, err := a.Index().Find(ctx, "nothing-here", 1); !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatal(err)
	}
	if _, err := a.Index().Find(ctx, "nothing-here", 1); !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatal(err)
	}
	if got := lookups(); got != first+1 {
		t.Fatalf("after an empty find on a stale view: %d lookups, want %d", got, first+1)
	}
}
