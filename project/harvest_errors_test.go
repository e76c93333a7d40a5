package project_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/project"
	"github.com/up-pool/up/wire"
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
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs j WHERE j.state = 'collected' AND (SELECT COUNT(*) FROM results r WHERE r.job = j.id) != 1`); n != 0 {
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
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs j WHERE j.state = 'collected' AND (SELECT COUNT(*) FROM results r WHERE r.job = j.id) != 1`); n != 0 {
		t.Fatalf("%d collected jobs without exactly one results row", n)
	}
}

// errWalk is a walk of the index that failed part-way.
var errWalk = errors.New("walk to 1a2b3c4d: no node known")

// failingWalk walks p's index, counting the walks in calls, and fails
// after the first entry.
func failingWalk(p *project.Project, calls *int) func(context.Context, string, int, func([]wire.IndexHit) error) error {
	return func(ctx context.Context, kw string, n int, visit func([]wire.IndexHit) error) error {
		*calls++
		err := p.IndexHarvest(ctx, kw, n, func(hits []wire.IndexHit) error {
			if err := visit(hits[:1]); err != nil {
				return err
			}
			return errWalk
		})
		return fmt.Errorf("harvest %q: %w", kw, err)
	}
}

// TestHarvestRetriesWalk: a walk of the index that fails part-way is
// retried, and the harvest gets every result once; one that keeps failing
// fails the harvest (Err) with the walk's error after 3 attempts, while
// what the failed walks listed is still harvested.
func TestHarvestRetriesWalk(t *testing.T) {
	f := startFlow(t, 8, 78)
	ctx := context.Background()
	if _, err := f.proj.SubmitFile(ctx, f.ledger, []byte(sweepFile), "sweep.yaml", nil); err != nil {
		t.Fatal(err)
	}
	if n := f.work(t, f.worker(t, "w1")); n != 30 {
		t.Fatalf("worker ran %d jobs", n)
	}
	f.net.FlushAll(ctx)
	f.proj.SetWalkBackoff(time.Millisecond)
	calls := 0
	failing := failingWalk(f.proj, &calls)
	f.proj.SetIndexHarvest(func(ctx context.Context, kw string, n int, visit func([]wire.IndexHit) error) error {
		if kw != "lhc:finished" { // the trickle walk
			return f.proj.IndexHarvest(ctx, kw, n, visit)
		}
		if calls < 2 {
			return failing(ctx, kw, n, visit)
		}
		calls++
		return f.proj.IndexHarvest(ctx, kw, n, visit)
	})
	rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || rep.Err() != nil || rep.Finished != 30 || rep.Recorded != 30 || rep.Collected != 30 {
		t.Fatalf("after 2 failed walks: %d walks, %+v, err %v; want 3 walks and all 30 results harvested once", calls, rep, rep.Err())
	}

	// A walk that keeps failing: the harvest fails, and says why.
	g := startFlow(t, 8, 79)
	if _, err := g.proj.SubmitFile(ctx, g.ledger, []byte(sweepFile), "sweep.yaml", nil); err != nil {
		t.Fatal(err)
	}
	if n := g.work(t, g.worker(t, "w1")); n != 30 {
		t.Fatalf("worker ran %d jobs", n)
	}
	g.net.FlushAll(ctx)
	g.proj.SetWalkBackoff(time.Millisecond)
	calls = 0
	gFailing := failingWalk(g.proj, &calls)
	g.proj.SetIndexHarvest(func(ctx context.Context, kw string, n int, visit func([]wire.IndexHit) error) error {
		if kw != "lhc:finished" { // the trickle walk
			return g.proj.IndexHarvest(ctx, kw, n, visit)
		}
		return gFailing(ctx, kw, n, visit)
	})
	rep, err = g.proj.Harvest(ctx, g.ledger, project.HarvestOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("harvest with a failing walk: %v", rep.Err())
	if calls != 3 || !errors.Is(rep.Err(), errWalk) || !strings.Contains(rep.Err().Error(), "3 attempts") {
		t.Fatalf("%d walks, Err %v; want 3 walks and the walk's error", calls, rep.Err())
	}
	if rep.Recorded != 1 || rep.Collected != 1 {
		t.Fatalf("%+v: want the one result the failed walks listed harvested", rep)
	}
}
