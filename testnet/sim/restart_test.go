package sim

import (
	"testing"
	"time"
)

// TestChurnRestartKeepsData: with ChurnRestart a node that comes back is
// the same node — its identity (gen, name, position) unchanged and the
// replicas it held kept — so heavy churn (mean lifetime and down time
// half an hour, each node down half the time) loses no job; without it the same
// run's nodes come back as new ones with no data (control: jobs are lost,
// or the run would not tell the two apart). Both without the repair on
// departure, which keeps every job even on nodes that come back empty
// (TestRepairKeepsJobsUnderChurn).
func TestChurnRestartKeepsData(t *testing.T) {
	c := shortStatic(64, 300)
	c.RunIdle = 6 * time.Hour
	c.ChurnLife = 30 * time.Minute // at an hour, fresh nodes lose a job on few seeds
	c.Seed = 2
	c.NoRepair = true
	fresh := run(t, c)
	c.ChurnRestart = true
	kept := run(t, c)
	t.Logf("new nodes: %d lost, %d collected; restarted nodes: %d lost, %d collected",
		fresh.m.lost, fresh.m.collected, kept.m.lost, kept.m.collected)
	if fresh.m.lost == 0 {
		t.Fatal("control: churn with nodes coming back empty lost no job")
	}
	if kept.m.lost != 0 || kept.m.collected != 300 {
		t.Fatalf("restarted nodes: %d lost, %d of 300 collected", kept.m.lost, kept.m.collected)
	}
	for i := range kept.nodes {
		n := &kept.nodes[i]
		if n.gen != 1 || n.name != nodeName(int32(i), 1) {
			t.Fatalf("node %d came back as incarnation %d: a restart changed its identity", i, n.gen)
		}
	}
}

// TestRepairKeepsJobsUnderChurn: nodes that come back as new ones with no
// data lose no job when each crash is repaired at once (replica.RepairTo):
// a job loses its last replica only if all r die within the repair's
// round trip. Control: the same run with the repair off loses jobs.
func TestRepairKeepsJobsUnderChurn(t *testing.T) {
	c := shortStatic(64, 300)
	c.RunIdle = 6 * time.Hour
	c.ChurnLife = 30 * time.Minute
	c.Seed = 2
	repaired := run(t, c)
	c.NoRepair = true
	unrepaired := run(t, c)
	t.Logf("with the repair: %d lost, %d collected, %d job states repaired; without: %d lost",
		repaired.m.lost, repaired.m.collected, repaired.m.repairJobs, unrepaired.m.lost)
	if unrepaired.m.lost == 0 {
		t.Fatal("control: churn without the repair lost no job")
	}
	if repaired.m.lost != 0 || repaired.m.collected != 300 {
		t.Fatalf("with the repair: %d lost, %d of 300 collected", repaired.m.lost, repaired.m.collected)
	}
}
