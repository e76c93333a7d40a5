package claimnet_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// TestReleaseReachesTheNearestNodeLast: a released claim is given back at
// the job's nearest node (the one that writes its index entries and ends
// their quarantine when it sees the job ready) only after every other node
// of the claim has it back, so a client the index offers the job to then
// cannot lose it to the released claim.
func TestReleaseReachesTheNearestNodeLast(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 58)
	ctx := context.Background()
	key := cn.keys[0]
	_, cl := cn.client(t, "releaser")
	won, err := cl.Claim(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(won.Nodes) < 2 {
		t.Fatalf("claim on %d nodes, want r", len(won.Nodes))
	}
	nearest := -1
	for _, i := range cn.net.Holders(key) {
		if cn.net.Node(i).ID() == won.Nodes[0] {
			nearest = i
		}
	}
	if nearest < 0 {
		t.Fatalf("the claim's nearest node %s holds no replica", won.Nodes[0])
	}
	// A release lapses the claim now: the job is ready from the next
	// millisecond on.
	later := cn.clock.Now().Add(time.Millisecond).UnixMilli()
	var mu sync.Mutex
	var seen [][]job.State // the other replicas' states each time the nearest turned ready
	cn.net.Node(nearest).Pool().OnChange(func(k []byte, st job.State, deleted bool) {
		if deleted || job.Expire(st, later).Phase != job.Ready || !bytes.Equal(k, key) {
			return
		}
		var others []job.State
		for _, i := range cn.net.Holders(key) {
			if i != nearest {
				s, _ := cn.net.Node(i).Pool().State(key)
				others = append(others, s)
			}
		}
		mu.Lock()
		seen = append(seen, others)
		mu.Unlock()
	})
	cl.Release(ctx, won, wire.SkipUnknown)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the nearest node never saw the job ready again")
	}
	for _, others := range seen {
		for _, s := range others {
			if job.Expire(s, later).Phase != job.Ready {
				t.Fatalf("nearest node ready while another replica still has %+v", s)
			}
		}
	}
}
