package project_test

import (
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/project"
)

// TestHarvestErrorResults: a job that prints nothing, one that exits 3
// and one a limit kills (its wall-clock limit, 90 % of a 1 s T_finish) are
// harvested like any other: every job the nodes are told is collected has
// exactly one results row, with its exit code and the limit that killed
// it; the clean unit is valid and each failed unit gets another copy,
// which another client runs.
func TestHarvestErrorResults(t *testing.T) {
	f := startFlow(t, 8, 77)
	ctx := context.Background()
	units := []project.Unit{
		{App: "noop", Keywords: []string{"lhc"}, TFinish: time.Hour},
		{App: "fail", Args: []string{"3"}, Keywords: []string{"lhc"}, TFinish: time.Hour},
		{App: "sleep", Args: []string{"30000"}, Keywords: []string{"lhc"}, TFinish: time.Second},
	}
	if rep, err := f.proj.SubmitUnits(ctx, f.ledger, units, 1, []byte("errors"), "errors", nil); err != nil || rep.Submitted != 3 {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	if n := f.work(t, f.worker(t, "w1")); n != 3 {
		t.Fatalf("worker ran %d jobs, want 3", n)
	}
	f.net.FlushAll(ctx)
	rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("harvest: %+v", rep)
	if rep.Recorded != 3 || rep.Collected != 3 || rep.Decided != 1 || rep.Extra != 2 {
		t.Fatalf("harvest %+v: want 3 recorded and collected, 1 unit decided, 2 extra copies", rep)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs j WHERE j.state = 'collected' AND (SELECT COUNT(*) FROM results r WHERE r.cid = j.cid) != 1`); n != 0 {
		t.Fatalf("%d collected jobs without exactly one results row", n)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM results WHERE exit_code = 3`); n != 1 {
		t.Fatalf("%d results with exit code 3, want 1", n)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM results WHERE error = 'killed: wall-clock limit'`); n != 1 {
		t.Fatalf("%d results killed by the wall-clock limit, want 1", n)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM results WHERE length(output) = 0`); n != 3 {
		t.Fatalf("%d results with empty output, want 3", n)
	}
	// The failed units' new copies go to another client (w1 ran a copy).
	if n := f.work(t, f.worker(t, "w2")); n != 2 {
		t.Fatalf("second worker ran %d jobs, want the 2 new copies", n)
	}
	f.net.FlushAll(ctx)
	if rep, err = f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil); err != nil || rep.Recorded != 2 || rep.Extra != 2 {
		t.Fatalf("second harvest %+v %v: want the 2 copies recorded and failing again, so 2 more copies", rep, err)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs j WHERE j.state = 'collected' AND (SELECT COUNT(*) FROM results r WHERE r.cid = j.cid) != 1`); n != 0 {
		t.Fatalf("%d collected jobs without exactly one results row", n)
	}
}
