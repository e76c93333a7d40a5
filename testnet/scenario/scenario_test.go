package scenario_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/testnet/scenario"
)

// TestScenarioStatic runs a small static scenario on 16 real nodes and in
// the simulator: every job is harvested on both sides, none is lost or
// claimed twice, and the report fills both columns.
func TestScenarioStatic(t *testing.T) {
	const jobs = 60
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	rep, err := scenario.Run(ctx, scenario.Options{Scenario: "static", Nodes: 16, Jobs: jobs, Rate: 20,
		Gap: time.Second, RunIdle: 2 * time.Second, Clients: 4, Seed: 7, Dir: t.TempDir(), Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if len(rep.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(rep.Runs))
	}
	run := rep.Runs[0]
	for _, f := range []scenario.Figures{run.Real, run.Sim} {
		if f.Submitted != jobs || f.Claimed != jobs || f.Finished != jobs || f.Harvested != jobs {
			t.Errorf("%s: %d submitted, %d claimed, %d finished, %d harvested of %d jobs", f.Side, f.Submitted, f.Claimed, f.Finished, f.Harvested, jobs)
		}
		if f.Lost != 0 || f.DoubleClaims != 0 {
			t.Errorf("%s: %d lost, %d double claims", f.Side, f.Lost, f.DoubleClaims)
		}
		if f.MeanRPC <= 0 || f.PeakMax < f.MedianMax || f.MedianMax <= 0 || f.RPCsPerJob["claim"] <= 0 || f.PeakIndexMax <= 0 {
			t.Errorf("%s: RPC figures not filled: %+v", f.Side, f)
		}
	}
	if run.Real.LogDoubles != 0 || run.Real.LostNoReplica != 0 {
		t.Errorf("real: %d jobs claimed by two clients in the claim logs, %d without a replica", run.Real.LogDoubles, run.Real.LostNoReplica)
	}
	if len(run.RealRows) == 0 || len(run.SimRows) == 0 {
		t.Fatalf("%d real and %d simulated seconds", len(run.RealRows), len(run.SimRows))
	}
	md := rep.Markdown()
	if !strings.Contains(md, "| metric | real | sim |") {
		t.Fatalf("no side-by-side table:\n%s", md)
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| jobs submitted") && strings.Count(line, "| 60 ") != 2 {
			t.Errorf("submitted row: %s", line)
		}
		if strings.Contains(line, "|  |") {
			t.Errorf("empty cell: %s", line)
		}
	}
	var csv bytes.Buffer
	if err := rep.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(csv.String(), "variant,metric,real,sim\n") || !strings.Contains(csv.String(), ",\"jobs submitted (r acks), by the end\",60,60\n") {
		t.Fatalf("compare.csv:\n%s", csv.String())
	}
	t.Logf("real run %v (wall %v), sim %v simulated; mean RPC/s per node real %.2f, sim %.2f; busiest median real %.0f, sim %.0f",
		run.Real.Span.Round(time.Millisecond), run.Real.Wall.Round(time.Millisecond), run.Sim.Span, run.Real.MeanRPC, run.Sim.MeanRPC,
		run.Real.MedianMax, run.Sim.MedianMax)
}

func TestScenarioOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o   scenario.Options
		bad string
	}{
		{scenario.Options{Scenario: "static", Dir: "x"}, ""},
		{scenario.Options{Scenario: "trace", Dir: "x"}, "unknown scenario"},
		{scenario.Options{Scenario: "static"}, "no directory"},
		{scenario.Options{Scenario: "static", Dir: "x", Nodes: 4}, "nodes 4"},
		{scenario.Options{Scenario: "dynamic", Dir: "x", Rate: -1}, "rate"},
		{scenario.Options{Scenario: "dynamic", Dir: "x", Scale: 0.5}, "scale"},
	} {
		err := tc.o.Validate()
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.bad)
		}
	}
}

// TestScenarioChurn: 32 real nodes whose mean lifetime and down time are
// a minute (a node restarts with its identity and data) harvest every
// job, with no double claim, and fail no more claim attempts than they
// win (issue 24); it fails on any job left unharvested. Before a failed
// attempt asked for its job's replica set to be repaired
// (ReleaseRequest.Repair), this run failed 700–2,100 attempts for its 60
// jobs: a job's live holders stayed below a quorum until a republish
// round. This size did not reproduce the stall of the 64-node, 2-minute
// run (with the old near rule, which counted down nodes among a job's
// closest, it still passes): that rule's own test is
// dht.TestNearestUnmarked, and the 64-node run's figures are in
// docs/evaluation/churn-real.
func TestScenarioChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of churn on 32 real nodes; not in -short")
	}
	const jobs = 60
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log bytes.Buffer
	rep, err := scenario.Run(ctx, scenario.Options{Scenario: "churn", Nodes: 32, Jobs: jobs, Rate: 10,
		ChurnLife: time.Minute, Clients: 4, Seed: 11, Dir: t.TempDir(), Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	f := rep.Runs[0].Real
	if f.Harvested != jobs || f.Lost != 0 || f.DoubleClaims != 0 || f.LogDoubles != 0 {
		t.Fatalf("real: %d of %d harvested, %d lost, %d double claims (%d in the claim logs)\n%s",
			f.Harvested, jobs, f.Lost, f.DoubleClaims, f.LogDoubles, log.String())
	}
	if f.FailedAttempts > f.Claimed {
		t.Errorf("real: %d failed claim attempts for %d won (by reason %v), want at most as many as won",
			f.FailedAttempts, f.Claimed, f.FailedBy)
	}
	t.Logf("real: %d harvested, %d failed claim attempts (simulator %d; by reason %v), RPCs per job %v",
		f.Harvested, f.FailedAttempts, rep.Runs[0].Sim.FailedAttempts, f.FailedBy, f.RPCsPerJob)
}
