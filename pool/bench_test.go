package pool_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// childResult is what the project process reports.
type childResult struct {
	Jobs    int   `json:"jobs"`
	Failed  int   `json:"failed"`
	CPUus   int64 `json:"cpu_us"`
	Elapsed int64 `json:"elapsed_ns"`
}

// TestProjectChild is the project process of BenchmarkSubmit: it runs only
// when that benchmark starts it, so the project's CPU is measured apart
// from the nodes'.
func TestProjectChild(t *testing.T) {
	dir := os.Getenv("UP_PROJECT_CHILD_DIR")
	if dir == "" {
		t.Skip("the project process of BenchmarkSubmit")
	}
	n, _ := strconv.Atoi(os.Getenv("UP_PROJECT_CHILD_JOBS"))
	ctx := context.Background()
	p, err := testnet.JoinProject(ctx, dir, os.Getenv("UP_PROJECT_CHILD_NODES"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Agent().Close()
	cpu0, t0 := testkit.CPUTime(), time.Now()
	signed := make([]*project.Prepared, n)
	for i := range signed {
		spec, err := p.NewSpec("hashchain", []string{strconv.Itoa(i)}, []string{"lhc"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if signed[i], err = p.Sign(spec); err != nil {
			t.Fatal(err)
		}
	}
	failed := 0
	for _, r := range p.Submit(ctx, signed) {
		if r.Err != nil {
			failed++
		}
	}
	res := childResult{Jobs: n, Failed: failed, CPUus: (testkit.CPUTime() - cpu0).Microseconds(), Elapsed: int64(time.Since(t0))}
	if err := testkit.Report(res); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSubmit submits b.N jobs from a project in its own process to 16
// nodes on loopback TCP with r = 5, and reports jobs/s and CPU per job on
// each side.
func BenchmarkSubmit(b *testing.B) {
	net, err := testnet.Start(context.Background(), testnet.Options{Nodes: 16, Dir: b.TempDir(), Transport: testnet.TCP, Seed: 31})
	if err != nil {
		b.Fatal(err)
	}
	defer net.Close()
	id, err := net.NewParty(certs.RoleProject, "lhc")
	if err != nil {
		b.Fatal(err)
	}
	addrs := net.NodeAddrs()
	b.ResetTimer()
	cmd := testkit.ChildCommand("TestProjectChild", []string{
		"UP_PROJECT_CHILD_DIR=" + id.Dir,
		"UP_PROJECT_CHILD_JOBS=" + strconv.Itoa(b.N),
		"UP_PROJECT_CHILD_NODES=" + addrs})
	cpu0 := testkit.CPUTime()
	var res childResult
	if err := testkit.RunChild(cmd, &res); err != nil {
		b.Fatalf("project process: %v", err)
	}
	nodeCPU := testkit.CPUTime() - cpu0
	b.StopTimer()
	if res.Jobs != b.N || res.Failed > 0 {
		b.Fatalf("project process: %+v", res)
	}
	b.ReportMetric(float64(res.Jobs)/time.Duration(res.Elapsed).Seconds(), "jobs/s")
	b.ReportMetric(float64(res.CPUus)/float64(res.Jobs), "project-cpu-µs/job")
	b.ReportMetric(float64(nodeCPU.Microseconds())/float64(res.Jobs), "nodes-cpu-µs/job")
}

// BenchmarkRepublish10k measures one republish period between two nodes
// holding the same 10,000 jobs (r = 2): the bytes of the round's frames
// (requests sent and replies received, as the rounds count them in
// RoundStats) and the process CPU.
func BenchmarkRepublish10k(b *testing.B) {
	const jobs = 10000
	cfg := testnet.Options{Nodes: 2, Dir: b.TempDir(), Transport: testnet.TCP, Seed: 32}
	cfg.DHT.Replication = 2
	net, err := testnet.Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer net.Close()
	ctx := context.Background()
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		b.Fatal(err)
	}
	defer p.Agent().Close()
	signed := make([]*project.Prepared, jobs)
	for i := range signed {
		spec, err := p.NewSpec("hashchain", []string{strconv.Itoa(i)}, []string{"lhc"}, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		if signed[i], err = p.Sign(spec); err != nil {
			b.Fatal(err)
		}
	}
	for _, r := range p.Submit(ctx, signed) {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	b.ResetTimer()
	var sent, received int64
	cpu0 := testkit.CPUTime()
	for b.Loop() {
		// One period: every node runs its round (testnet.RepublishAll
		// does not sum the byte counts).
		var synced int
		for _, nd := range net.Live() {
			st := nd.Pool().RepublishRound(ctx)
			synced += st.Synced
			sent += int64(st.BytesSent)
			received += int64(st.BytesReceived)
		}
		for _, nd := range net.Live() {
			nd.Pool().Quiesce()
		}
		if synced != 2*jobs {
			b.Fatalf("synced %d states, want %d", synced, 2*jobs)
		}
	}
	cpu := testkit.CPUTime() - cpu0
	if sent == 0 || received == 0 {
		b.Fatalf("rounds counted %d bytes sent, %d received", sent, received)
	}
	n := float64(b.N)
	b.ReportMetric(float64(sent+received)/n, "bytes/round")
	b.ReportMetric(float64(sent)/n, "sent-bytes/round")
	b.ReportMetric(float64(sent+received)/n/jobs, "bytes/job")
	b.ReportMetric(float64(cpu.Microseconds())/n/1000, "cpu-ms/round")
	b.ReportMetric(float64(cpu.Microseconds())/n/jobs, "cpu-µs/job")
}
