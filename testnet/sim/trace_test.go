package sim

import (
	"testing"
	"time"
)

// shortTrace is the trace workload over 3 days at 64 nodes, about 600 jobs.
func shortTrace(seed uint64, churn time.Duration) Config {
	c, err := Preset("trace", 64)
	if err != nil {
		panic(err)
	}
	c.Duration, c.Jobs, c.Seed, c.ChurnLife = 72*time.Hour, 600, seed, churn
	return c
}

// TestTraceWorkloadOwnStream: the trace's jobs come from a random stream
// of their own, so a run that draws differently elsewhere (churn on
// instead of off) submits the same jobs; another seed submits others
// (the negative control).
func TestTraceWorkloadOwnStream(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three 3-day traces")
	}
	quiet, churned := run(t, shortTrace(1, 0)), run(t, shortTrace(1, 24*time.Hour))
	if quiet.m.submitted != churned.m.submitted || quiet.m.submitted == 0 {
		t.Fatalf("seed 1 submitted %d jobs without churn and %d with: the workload depends on the rest of the run", quiet.m.submitted, churned.m.submitted)
	}
	if other := run(t, shortTrace(2, 0)); other.m.submitted == quiet.m.submitted {
		t.Fatalf("seeds 1 and 2 both submitted %d jobs", other.m.submitted)
	}
	t.Logf("seed 1: %d jobs with and without churn", quiet.m.submitted)
}
