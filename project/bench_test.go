package project_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// TestProjectChild is the project process of BenchmarkProject: it runs
// only when that benchmark starts it, so the project's CPU is measured
// apart from the nodes'.
func TestProjectChild(t *testing.T) {
	mode := os.Getenv("UP_PROJECT_BENCH")
	if mode == "" {
		t.Skip("the project process of BenchmarkProject")
	}
	dir := os.Getenv("UP_PROJECT_DIR")
	ctx := context.Background()
	p, err := testnet.JoinProject(ctx, dir, os.Getenv("UP_PROJECT_NODES"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Agent().Close()
	l, err := project.OpenLedger(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cpu0, t0 := testkit.CPUTime(), time.Now()
	var n, failed int
	switch mode {
	case "submit":
		file, _ := os.ReadFile(filepath.Join(dir, "jobs.yaml"))
		rep, err := p.SubmitFile(ctx, l, file, "bench", nil)
		if err != nil {
			t.Fatal(err)
		}
		n, failed = rep.Submitted, len(rep.Errors)
	case "harvest":
		rep, err := p.Harvest(ctx, l, project.HarvestOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		n, failed = rep.Recorded, len(rep.Errors)
	}
	if err := testkit.Report(map[string]int64{"jobs": int64(n), "failed": int64(failed),
		"cpu_us": (testkit.CPUTime() - cpu0).Microseconds(), "elapsed_us": time.Since(t0).Microseconds()}); err != nil {
		t.Fatal(err)
	}
}

// runChild runs TestProjectChild in mode and returns its report.
func runChild(b *testing.B, mode, dir, addrs string) map[string]int64 {
	var args []string
	if prof := os.Getenv("UP_PROJECT_CPUPROFILE"); prof != "" {
		// The project process's CPU profile: <prefix><mode>.prof.
		args = append(args, "-test.cpuprofile="+prof+mode+".prof")
	}
	cmd := testkit.ChildCommand("TestProjectChild", []string{"UP_PROJECT_BENCH=" + mode, "UP_PROJECT_DIR=" + dir, "UP_PROJECT_NODES=" + addrs}, args...)
	res := map[string]int64{}
	if err := testkit.RunChild(cmd, &res); err != nil {
		b.Fatalf("project process (%s): %v", mode, err)
	}
	return res
}

// BenchmarkProject measures the project's own CPU per job, in its own
// process, for submitting b.N jobs to 16 TCP nodes (r = 5) and for
// harvesting their results (fetch, open, verify, store, collect). With
// UP_PROJECT_CPUPROFILE=/path/prefix- the project processes write their
// CPU profiles to /path/prefix-submit.prof and -harvest.prof.
func BenchmarkProject(b *testing.B) {
	ctx := context.Background()
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 16, Dir: b.TempDir(), Seed: 75, Transport: testnet.TCP, PoolLoops: true,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.Limit, cfg.Claim.Burst = 1e6, 1e6 }})
	if err != nil {
		b.Fatal(err)
	}
	defer net.Close()
	id, err := net.NewParty(certs.RoleProject, "lhc")
	if err != nil {
		b.Fatal(err)
	}
	file := fmt.Sprintf("app: noop\nargs: [\"{i}\"]\nkeywords: [lhc]\nsweep:\n  i: {from: 1, to: %d}\n", b.N)
	if err := os.WriteFile(filepath.Join(id.Dir, "jobs.yaml"), []byte(file), 0o644); err != nil {
		b.Fatal(err)
	}
	addrs := net.NodeAddrs()
	b.ResetTimer()
	sub := runChild(b, "submit", id.Dir, addrs)
	b.StopTimer()
	if sub["jobs"] != int64(b.N) {
		b.Fatalf("submitted %v", sub)
	}
	// Complete every job: claim it and return a sealed result.
	l, err := project.OpenLedger(filepath.Join(id.Dir, "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	cids := ledgerCIDs(b, l.DB())
	l.Close()
	w, err := net.NewAgent(ctx, certs.RoleClient, "worker")
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	cl := claimclient.NewClaimer(w.Endpoint(), w.DHT(), nil, 0)
	for _, s := range cids {
		c, _ := cid.Decode(s)
		place := net.PlaceOf(c.Bytes())
		claim, err := cl.ClaimAt(ctx, c.Bytes(), place, net.TrueClosest(place, 5))
		if err != nil {
			b.Fatal(err)
		}
		env, err := result.Seal(result.Inner{Job: c.Bytes(), ClientCert: w.Identity().Cert.Raw, Output: []byte("ok"), At: time.Now().UnixMilli()},
			w.Identity().Key, id.ResultPublicKey(), nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cl.SubmitResult(ctx, claim, env.Encode()); err != nil {
			b.Fatal(err)
		}
	}
	net.FlushAll(ctx)
	b.StartTimer()
	har := runChild(b, "harvest", id.Dir, addrs)
	b.StopTimer()
	if har["jobs"] != int64(b.N) {
		b.Fatalf("harvested %v", har)
	}
	b.ReportMetric(float64(sub["cpu_us"])/float64(b.N), "submit-cpu-µs/job")
	b.ReportMetric(float64(har["cpu_us"])/float64(b.N), "harvest-cpu-µs/job")
	b.ReportMetric(float64(b.N)/(float64(sub["elapsed_us"])/1e6), "submit-jobs/s")
	b.ReportMetric(float64(b.N)/(float64(har["elapsed_us"])/1e6), "harvest-jobs/s")
}
