package project_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/wire"
)

// dropStores makes node i a dropper: it acknowledges every job a project
// sends it as held by acks replicas and keeps nothing, and refuses to be
// a replica for other nodes. It returns how many project stores it took.
func (f *flow) dropStores(t *testing.T, i int, acks uint16) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	ep := f.net.Node(i).Endpoint()
	ep.Handle(wire.ProtoJobStore, wire.MaxJobFrame, nil, func(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
		var req wire.StoreRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		if !req.Replicate {
			return nil, overlay.StatusErr(wire.StatusInternal, errors.New("dropper"))
		}
		n.Add(1)
		resp := &wire.StoreResponse{Results: make([]wire.StoreResult, len(req.Jobs))}
		for j := range resp.Results {
			resp.Results[j] = wire.StoreResult{Status: wire.StatusOK, Acks: acks}
		}
		return resp, nil
	})
	return &n
}

// signedJob is a signed hashchain job of the flow's project, told apart
// by arg.
func (f *flow) signedJob(t *testing.T, arg string) *project.Prepared {
	t.Helper()
	spec, err := f.proj.NewSpec("hashchain", []string{"10", arg}, []string{"lhc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	prep, err := f.proj.Sign(spec)
	if err != nil {
		t.Fatal(err)
	}
	return prep
}

// TestSubmitFirstNodeDropper: the node a project sends a job to first
// acknowledges it as held by r replicas and keeps nothing. The job is not
// counted submitted on that word: only on r replicas' signed receipts,
// which the project gets by sending it again through another of the
// job's closest nodes, and the job is then held by r nodes.
func TestSubmitFirstNodeDropper(t *testing.T) {
	f := startFlow(t, 8, 91)
	ctx := context.Background()
	prep := f.signedJob(t, "1")
	d := f.proj.Agent().DHT()
	first := d.NearestKnown(keyspace.KeyPos(prep.Key()), 1)
	if len(first) != 1 {
		t.Fatal("the project knows no node")
	}
	i := f.net.Index(first[0])
	if i < 0 {
		t.Fatalf("first node %s not in the network", first[0])
	}
	dropped := f.dropStores(t, i, uint16(d.Replication()))
	res := f.proj.Submit(ctx, []*project.Prepared{prep})
	if dropped.Load() == 0 {
		t.Fatalf("the project did not send the job to node %d first", i)
	}
	holders := f.net.Holders(prep.Key())
	t.Logf("submit: %d acks, %v; held by %v", res[0].Acks, res[0].Err, holders)
	if res[0].Err == nil && len(holders) < d.Replication() {
		t.Fatalf("job counted submitted with %d acks but held by %d nodes %v: lost to the dropper", res[0].Acks, len(holders), holders)
	}
	if res[0].Err != nil || res[0].Acks < d.Replication() {
		t.Fatalf("job not placed around the dropper: %d acks, %v", res[0].Acks, res[0].Err)
	}
	if len(holders) < d.Replication() {
		t.Fatal(fmt.Sprintf("job held by %v, want %d nodes", holders, d.Replication()))
	}
}

// TestReceiptsNeeded: r − f receipts make a job submitted (f =
// claim.Faults(r)).
func TestReceiptsNeeded(t *testing.T) {
	for r, want := range map[int]int{1: 1, 3: 3, 4: 3, 5: 4, 7: 5, 10: 7} {
		if got := project.ReceiptsNeeded(r); got != want {
			t.Errorf("ReceiptsNeeded(%d) = %d, want %d", r, got, want)
		}
	}
}

// TestSubmitPastASilentReplica: one of a job's r closest acknowledges the
// jobs it is given as a replica and keeps and signs nothing. The job is
// still submitted, on the other replicas' r − f signed receipts: one
// faulty replica must not block a project's submissions (before, all r
// receipts were required and every such job failed).
func TestSubmitPastASilentReplica(t *testing.T) {
	f := startFlow(t, 8, 92)
	ctx := context.Background()
	prep := f.signedJob(t, "2")
	d := f.proj.Agent().DHT()
	near := d.NearestKnown(keyspace.KeyPos(prep.Key()), 2)
	if len(near) != 2 {
		t.Fatal("the project knows too few nodes")
	}
	i := f.net.Index(near[1]) // a replica, not the first node
	var silent atomic.Int64
	f.net.Node(i).Endpoint().Handle(wire.ProtoJobStore, wire.MaxJobFrame, nil, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.StoreRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		silent.Add(1)
		resp := &wire.StoreResponse{Results: make([]wire.StoreResult, len(req.Jobs))}
		for j := range resp.Results {
			resp.Results[j] = wire.StoreResult{Status: wire.StatusOK, Acks: 1}
		}
		return resp, nil
	})
	res := f.proj.Submit(ctx, []*project.Prepared{prep})
	t.Logf("submit: %d acks, %v; silent replica asked %d times", res[0].Acks, res[0].Err, silent.Load())
	if silent.Load() == 0 {
		t.Skip("the silent node was not asked to hold the job: the test tested nothing")
	}
	if res[0].Err != nil || res[0].Acks < project.ReceiptsNeeded(d.Replication()) {
		t.Fatalf("job not submitted past one silent replica: %d acks, %v", res[0].Acks, res[0].Err)
	}
}
