package bench_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/testnet/bench"
	"github.com/up-pool/up/testnet/testkit"
)

// TestBenchLifecycle: a small lifecycle bench adds up: every job
// submitted, run once, harvested exactly once and collected, every unit
// validated, and the figures are there.
func TestBenchLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    bench.Options
	}{
		{"inproc", bench.Options{Nodes: 8, R: 3, Clients: 2, Jobs: 40, Copies: 2, Keywords: 2, Batch: 8, ProjectShare: true, TCollect: 2 * time.Second}},
		{"subprocess", bench.Options{Nodes: 6, R: 3, Clients: 2, Slots: 1, Jobs: 6, Exec: bench.ExecSubprocess,
			Launcher: testkit.Launcher(), LauncherEnv: testkit.LauncherEnv()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Dir, o.Timeout, o.Seed = t.TempDir(), 2*time.Minute, 3
			o.Log = testLog{t}
			rep, err := bench.Run(context.Background(), o)
			var out bytes.Buffer
			rep.Format(&out)
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatal(err)
			}
			if err := rep.Consistent(); err != nil {
				t.Fatal(err)
			}
			if rep.Released > 0 && o.Copies == 1 {
				t.Fatalf("%d claims released with one copy per unit", rep.Released)
			}
			if rep.ClaimsWon != rep.Runs+rep.Released {
				t.Fatalf("%d claims won, %d runs, %d released", rep.ClaimsWon, rep.Runs, rep.Released)
			}
			if rep.JobsPerSec <= 0 || rep.CPUUSPerJob <= 0 || rep.RPCsPerJob < float64(rep.MinRPCsPerJob)/2 || rep.BytesPerJob <= 0 || rep.PeakRSSMiB <= 0 {
				t.Fatalf("implausible figures: %+v", rep)
			}
			if rep.Claim.N != rep.ClaimsWon {
				t.Fatalf("%d claims timed, %d won", rep.Claim.N, rep.ClaimsWon)
			}
			if o.TCollect > 0 && (rep.EmptyAfterS <= 0 || rep.LeftJobs != 0 || rep.LeftEntries != 0) {
				t.Fatalf("after T_collect = %s: %d jobs left in node stores, %d index entries (empty after %.1f s)", o.TCollect, rep.LeftJobs, rep.LeftEntries, rep.EmptyAfterS)
			}
			if o.ProjectShare && rep.PartyCPUUSPerJob["project"] <= 0 {
				t.Logf("project share not sampled: %s", rep.ShareNote)
			}
		})
	}
}

// testLog writes a bench's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(string(bytes.TrimRight(b, "\n")))
	return len(b), nil
}

// TestBenchOptionsValidate: bad options are refused, each in one line.
func TestBenchOptionsValidate(t *testing.T) {
	for _, o := range []bench.Options{
		{Nodes: 4, R: 5},
		{R: 0, Nodes: 16, Clients: -1},
		{Jobs: 10, Copies: 3, Clients: 4},
		{Copies: 3, Clients: 2},
		{Keywords: 33},
		{Rate: -1},
		{Exec: "thread"},
		{Exec: bench.ExecSubprocess},
		{Batch: 100000},
	} {
		o.Dir = "x"
		err := o.Validate()
		if err == nil {
			t.Errorf("%+v accepted", o)
			continue
		}
		if bytes.ContainsRune([]byte(err.Error()), '\n') {
			t.Errorf("%+v: error of more than one line: %q", o, err)
		}
	}
	if err := (bench.Options{Dir: "x"}).Validate(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}

// BenchmarkLifecycle runs the full-lifecycle bench with the defaults of
// `up bench` (16 nodes, r = 5, 4 clients × 2 slots, one keyword, one copy)
// and b.N jobs (at least 300: pass -benchtime 500x for more). ns/op is
// the wall time per job in the steady phase, setup excluded.
func BenchmarkLifecycle(b *testing.B) {
	jobs := b.N
	if jobs < 100 {
		jobs = 300
	}
	rep, err := bench.Run(context.Background(), bench.Options{Jobs: jobs, Dir: b.TempDir(), ProjectShare: true, Timeout: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	rep.Format(&out)
	b.Log("\n" + out.String())
	if err := rep.Consistent(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(1e9/rep.JobsPerSec, "ns/op")
	b.ReportMetric(rep.JobsPerSec, "jobs/s")
	b.ReportMetric(rep.CPUUSPerJob, "CPU-µs/job")
	if v, ok := rep.PartyCPUUSPerJob["project"]; ok {
		b.ReportMetric(v, "project-CPU-µs/job")
	}
	b.ReportMetric(rep.RPCsPerJob, "RPCs/job")
	var lookups float64
	for k, v := range rep.LookupsPerJob {
		if k != "cached" {
			lookups += v
		}
	}
	b.ReportMetric(lookups, "lookups/job")
	b.ReportMetric(rep.BytesPerJob, "B/job")
	b.ReportMetric(rep.SubmitToHarvest.P50, "p50-ms")
	b.ReportMetric(rep.SubmitToHarvest.P99, "p99-ms")
}
