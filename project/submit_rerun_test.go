package project_test

import (
	"context"
	"testing"

	"github.com/up-pool/up/wire"
)

// storeRPCs is how many /up/job/store calls the network's nodes received.
func (f *flow) storeRPCs(t *testing.T) float64 {
	t.Helper()
	var n float64
	for _, nd := range f.net.Live() {
		mfs, err := nd.Endpoint().Metrics().Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "up_rpc_received_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "protocol" && l.GetValue() == wire.ProtoJobStore {
						n += m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return n
}

// TestSubmitRerunAsksFirst: a submission killed after its jobs reached
// the nodes but before the acknowledgements were recorded is re-run
// without storing any job again (the nodes are asked what they hold);
// jobs that never reached them are sent.
func TestSubmitRerunAsksFirst(t *testing.T) {
	f := startFlow(t, 8, 80)
	f.proj.SetChunk(10)
	ctx, kill := context.WithCancel(context.Background())
	if _, err := f.proj.SubmitFile(ctx, f.ledger, []byte(sweepFile), "sweep.yaml", func(done, total int) {
		if done >= 10 {
			kill() // dies after the first round: 10 jobs sent, 20 not
		}
	}); err != nil {
		t.Fatal(err)
	}
	// ... and before it recorded the first round's acknowledgements.
	if _, err := f.ledger.DB().Exec(`UPDATE jobs SET state = 'prepared', acks = 0, submitted = NULL`); err != nil {
		t.Fatal(err)
	}
	before := f.storeRPCs(t)
	rep, err := f.proj.SubmitFile(context.Background(), f.ledger, []byte(sweepFile), "sweep.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Submitted != 20 || rep.Already != 10 || len(rep.Errors) != 0 {
		t.Fatalf("re-run: %+v, want the 20 jobs never sent submitted and the 10 held found", rep)
	}
	t.Logf("re-run with 10 of 30 jobs held: %v store RPCs", f.storeRPCs(t)-before)
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs WHERE state = 'submitted'`); n != 30 {
		t.Fatalf("%d jobs submitted in the ledger, want 30", n)
	}
	// Every job held: a re-run after a kill stores nothing.
	if _, err := f.ledger.DB().Exec(`UPDATE jobs SET state = 'prepared', acks = 0, submitted = NULL`); err != nil {
		t.Fatal(err)
	}
	before = f.storeRPCs(t)
	rep, err = f.proj.SubmitFile(context.Background(), f.ledger, []byte(sweepFile), "sweep.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if stores := f.storeRPCs(t) - before; stores != 0 || rep.Submitted != 0 || rep.Already != 30 {
		t.Fatalf("re-run with every job held: %v store RPCs, %+v; want none sent, 30 found", stores, rep)
	}
	if n := f.jobsInNetwork(); n != 30 {
		t.Fatalf("network holds %d jobs, want 30", n)
	}
}
