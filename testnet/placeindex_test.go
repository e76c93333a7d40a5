package testnet_test

import (
	"context"
	"testing"

	"github.com/up-pool/up/testnet"
)

// listedOn returns, per job, the nodes whose index lists it under kw.
func listedOn(n *testnet.Network, kw string, keys [][]byte) map[int]int {
	on := map[int]int{} // node index → jobs listed there
	for i := range n.Len() {
		nd := n.Node(i)
		if nd == nil || nd.Index() == nil {
			continue
		}
		for _, k := range keys {
			if nd.Index().Explain(kw, k).Listed {
				on[i]++
			}
		}
	}
	return on
}

// TestBatchListedOnOneIndexNode: the entries of a submission batch's jobs
// are written at their place's point of the keyword's region
// (index.EntryPoint by place key), so one index node lists them all and a
// query it answers can serve a client the batch's jobs together.
// Control: jobs signed alone are placed by their own keys and spread
// over the region's several nodes (so the check above can fail).
func TestBatchListedOnOneIndexNode(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 16, Seed: 95})
	batch := testnet.SubmitJobs(t, f.Project, 12, testnet.Jobs{Batch: true})
	alone := testnet.SubmitJobs(t, f.Project, 12, testnet.Jobs{Args: func(i int) []string { return []string{"alone", string(rune('a' + i))} }})
	f.Net.FlushAll(context.Background())
	kw := f.Project.Name()
	on := listedOn(f.Net, kw, batch)
	total := 0
	for _, c := range on {
		total += c
	}
	spread := listedOn(f.Net, kw, alone)
	t.Logf("batch of 12: listed on %d index nodes %v; 12 jobs alone: on %v", len(on), on, spread)
	if len(spread) < 2 {
		t.Fatalf("control: 12 jobs placed alone listed on %v: the region has one node, the test proves nothing", spread)
	}
	if len(on) != 1 || total != len(batch) {
		t.Errorf("a batch's 12 jobs listed %d times on %d index nodes %v, want once each on one", total, len(on), on)
	}
}
