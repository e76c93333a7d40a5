package project_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

type flow struct {
	net    *testnet.Network
	clock  *testnet.Clock
	proj   *project.Project
	ledger *project.Ledger
}

func startFlow(t *testing.T, nodes int, seed uint64) *flow {
	t.Helper()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: nodes, Seed: seed})
	l, err := project.OpenLedger(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &flow{net: f.Net, clock: f.Clock, proj: f.Project, ledger: l}
}

func (f *flow) worker(t *testing.T, name string) *client.Client {
	t.Helper()
	_, c := f.agentWorker(t, name)
	return c
}

// agentWorker is worker with its agent, so the same client can also lie
// (lieAs).
func (f *flow) agentWorker(t *testing.T, name string) (*agent.Agent, *client.Client) {
	t.Helper()
	a, err := f.net.NewAgent(context.Background(), certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	r, err := runner.New(runner.Config{Launcher: testkit.Launcher(), WorkRoot: t.TempDir(),
		Allow: map[string][]string{"lhc": {"*"}}, Env: testkit.LauncherEnv()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}}, Runner: r, Slots: 1, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return a, c
}

// work runs the worker until it finds no job.
func (f *flow) work(t *testing.T, c *client.Client) int {
	t.Helper()
	n := 0
	for {
		f.net.FlushAll(context.Background())
		ran, err := c.RunOne(context.Background(), "lhc")
		if !ran {
			return n
		}
		if err != nil {
			t.Fatalf("worker: %v", err)
		}
		n++
	}
}

func (f *flow) ledgerCount(t *testing.T, q string) int {
	t.Helper()
	var n int
	if err := f.ledger.DB().QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// jobsInNetwork counts the distinct jobs the nodes hold.
func (f *flow) jobsInNetwork() int {
	seen := map[string]bool{}
	for _, nd := range f.net.Live() {
		for _, k := range nd.Pool().Keys() {
			seen[string(k)] = true
		}
	}
	return len(seen)
}

const sweepFile = `
app: hashchain
args: ["100", "{i}"]
keywords: [lhc]
t_finish: 1h
sweep:
  i: {from: 1, to: 30}
`

// TestSubmitResumes: a submission killed part-way and run again sends
// only what was missing: every unit's job exists once, in the ledger and
// in the network.
func TestSubmitResumes(t *testing.T) {
	f := startFlow(t, 8, 71)
	f.proj.SetChunk(10)
	ctx, kill := context.WithCancel(context.Background())
	rep, err := f.proj.SubmitFile(ctx, f.ledger, []byte(sweepFile), "sweep.yaml", func(done, total int) {
		if done >= 10 {
			kill() // the workstation dies after the first round
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Submitted != 10 || rep.Prepared != 30 {
		t.Fatalf("first run: %+v", rep)
	}
	rep, err = f.proj.SubmitFile(context.Background(), f.ledger, []byte(sweepFile), "sweep.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Prepared != 0 || rep.Submitted != 20 || rep.Already != 10 || len(rep.Errors) != 0 {
		t.Fatalf("re-run: %+v", rep)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs`); n != 30 {
		t.Fatalf("ledger holds %d jobs, want 30", n)
	}
	if n := f.jobsInNetwork(); n != 30 {
		t.Fatalf("network holds %d jobs, want 30", n)
	}
	rep, _ = f.proj.SubmitFile(context.Background(), f.ledger, []byte(sweepFile), "sweep.yaml", nil)
	if rep.Prepared != 0 || rep.Submitted != 0 || rep.Already != 30 {
		t.Fatalf("third run submitted again: %+v", rep)
	}
}

// TestHarvestExactlyOnce: every result is harvested once, also when a
// harvest is interrupted between storing the results and telling the
// nodes, and run again: the re-run confirms the stored results to the
// nodes; the nodes are told "collected" only after the ledger holds the
// result. The sweep's units are of one copy, so each is decided as its
// result is recorded, in the same transaction (ledger_decide.go).
func TestHarvestExactlyOnce(t *testing.T) {
	f := startFlow(t, 8, 72)
	if _, err := f.proj.SubmitFile(context.Background(), f.ledger, []byte(sweepFile), "sweep.yaml", nil); err != nil {
		t.Fatal(err)
	}
	if n := f.work(t, f.worker(t, "w1")); n != 30 {
		t.Fatalf("worker ran %d jobs", n)
	}
	f.net.FlushAll(context.Background())
	ctx, kill := context.WithCancel(context.Background())
	rep, err := f.proj.Harvest(ctx, f.ledger, project.HarvestOptions{}, func(done, total int) { kill() })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("interrupted harvest: %+v", rep)
	// Stopped right after the results were stored: nothing confirmed to
	// the nodes; the units of one copy decided with their results.
	if rep.Recorded != 30 || rep.Collected != 0 || rep.Decided != 30 || !errors.Is(errors.Join(rep.Errors...), context.Canceled) {
		t.Fatalf("interrupted harvest: %+v, want 30 recorded and decided, none collected, and the interruption reported", rep)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs WHERE state = 'harvested'`); n != 30 {
		t.Fatalf("%d jobs harvested and not collected after the interruption, want 30", n)
	}
	rep, err = f.proj.Harvest(context.Background(), f.ledger, project.HarvestOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second harvest: %+v", rep)
	if rep.Recorded != 0 || rep.Collected != 30 || rep.Decided != 0 || len(rep.Errors) != 0 {
		t.Fatalf("second harvest: %+v, want nothing new recorded or decided, 30 collected", rep)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM results`); n != 30 {
		t.Fatalf("ledger holds %d results, want 30", n)
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs WHERE state = 'collected'`); n != 30 {
		t.Fatalf("%d jobs collected, want 30", n)
	}
	f.net.RepublishAll(context.Background())
	f.net.FlushAll(context.Background())
	rep, err = f.proj.Harvest(context.Background(), f.ledger, project.HarvestOptions{}, nil)
	if err != nil || rep.Recorded != 0 || rep.Decided != 0 {
		t.Fatalf("third harvest recorded %d, decided %d: %v", rep.Recorded, rep.Decided, err)
	}
	st, err := f.ledger.Stats(f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Units[project.UnitValid] != 30 || len(st.Credit) != 1 || st.Credit[0].Valid != 30 {
		t.Fatalf("stats %+v", st)
	}
}

// TestFewerNodesThanR: a submission to a network smaller than r fails
// with an error naming the job and the shortfall, and stays pending.
func TestFewerNodesThanR(t *testing.T) {
	f := startFlow(t, 3, 73)
	rep, err := f.proj.SubmitFile(context.Background(), f.ledger, []byte(sweepFile), "sweep.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Submitted != 0 || len(rep.Errors) != 30 {
		t.Fatalf("%+v", rep)
	}
	t.Logf("first error: %v", rep.Errors[0])
	named := map[string]bool{}
	for _, c := range ledgerCIDs(t, f.ledger.DB()) {
		named["job "+c+": "] = false
	}
	for _, e := range rep.Errors {
		if !errors.Is(e, project.ErrTooFewReplicas) {
			t.Fatalf("error %q does not wrap ErrTooFewReplicas", e)
		}
		msg := e.Error()
		// 3 nodes: at most 3 of r = 5 can acknowledge.
		if !strings.Contains(msg, " of 5 replicas acknowledged") || !strings.Contains(msg, "too few replicas") {
			t.Fatalf("error %q does not name the shortfall", msg)
		}
		job, _, _ := strings.Cut(msg, ": ")
		if seen, ok := named[job+": "]; !ok || seen {
			t.Fatalf("error %q names no job of the ledger, or one named twice", msg)
		}
		named[job+": "] = true
	}
	if n := f.ledgerCount(t, `SELECT COUNT(*) FROM jobs WHERE state = 'prepared'`); n != 30 {
		t.Fatalf("%d jobs pending", n)
	}
}

// TestSubmitStoreTimeout: a store call that outlasts the store timeout is
// given up (on every node in turn) and each job reports the deadline, not
// a hang and not a success; the same jobs go in with the default timeout.
func TestSubmitStoreTimeout(t *testing.T) {
	f := startFlow(t, 8, 76)
	ctx := context.Background()
	var prepared []*project.Prepared
	for i := range 3 {
		spec, err := f.proj.NewSpec("hashchain", []string{"10", fmt.Sprint(i)}, []string{"lhc"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		prep, err := f.proj.Sign(spec)
		if err != nil {
			t.Fatal(err)
		}
		prepared = append(prepared, prep)
	}
	f.proj.SetStoreTimeout(time.Nanosecond)
	for _, r := range f.proj.Submit(ctx, prepared) {
		if !errors.Is(r.Err, context.DeadlineExceeded) {
			t.Fatalf("job %s with a 1 ns store timeout: %v, want the deadline", r.CID, r.Err)
		}
	}
	f.proj.SetStoreTimeout(project.DefaultStoreTimeout)
	for _, r := range f.proj.Submit(ctx, prepared) {
		if r.Err != nil || r.Acks < 5 {
			t.Fatalf("job %s with the default timeout: %d acks, %v", r.CID, r.Acks, r.Err)
		}
	}
}

// ledgerCIDs lists the CIDs of the jobs a ledger database records, in
// CID order.
func ledgerCIDs(t testing.TB, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT cid FROM jobs ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
