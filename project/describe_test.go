package project_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet/testkit"
)

const describeFile = `
app: hashchain
args: ["10"]
keywords: [lhc]
t_finish: 1h
`

// workerAllowing is a worker of project lhc allowing only apps.
func (f *flow) workerAllowing(t *testing.T, name string, apps ...string) *client.Client {
	t.Helper()
	a, err := f.net.NewAgent(context.Background(), certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	r, err := runner.New(runner.Config{Launcher: testkit.Launcher(), WorkRoot: t.TempDir(),
		Allow: map[string][]string{"lhc": apps}, Env: testkit.LauncherEnv()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}}, Runner: r, Slots: 1, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// submitOne submits a job file and returns its jobs' CIDs.
func (f *flow) submitFile(t *testing.T, file string) []string {
	t.Helper()
	if _, err := f.proj.SubmitFile(context.Background(), f.ledger, []byte(file), "job.yaml", nil); err != nil {
		t.Fatal(err)
	}
	f.net.FlushAll(context.Background())
	rows, err := f.ledger.DB().Query(`SELECT cid FROM jobs ORDER BY unit, copy`)
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
	return out
}

func (f *flow) describe(t *testing.T, what string) *project.Description {
	t.Helper()
	d, err := f.proj.Describe(context.Background(), f.ledger, what)
	if err != nil {
		t.Fatalf("describe %s: %v", what, err)
	}
	for _, jd := range d.Jobs {
		t.Logf("job %s (%s): %+v", jd.Job, jd.LedgerState, jd.Verdict)
	}
	return d
}

// reason returns the verdict line of code, if any.
func reason(jd project.JobDescription, code string) (project.Reason, bool) {
	for _, r := range jd.Verdict {
		if r.Code == code {
			return r, true
		}
	}
	return project.Reason{}, false
}

// TestDescribeNotAllowed: a job whose application the one client that
// found it does not allow is declined with that reason, and the verdict
// says so and names the --allow that would run it; once a client that
// allows it ran it, no such reason is given (control).
func TestDescribeNotAllowed(t *testing.T) {
	f := startFlow(t, 8, 91)
	cids := f.submitFile(t, describeFile)
	w := f.workerAllowing(t, "picky", "digest")
	if ran, _ := w.RunOne(context.Background(), "lhc"); ran {
		t.Fatal("a worker that does not allow hashchain ran it")
	}
	d := f.describe(t, cids[0])
	jd := d.Jobs[0]
	r, ok := reason(jd, "not-allowed")
	if !ok || !strings.Contains(r.Why, "not allowed by any client that found it") || !strings.Contains(r.Fix, "--allow lhc=hashchain") {
		t.Fatalf("verdict %+v, want the application not allowed by any client, fixed by --allow lhc=hashchain", jd.Verdict)
	}
	if _, ok := reason(jd, "no-query"); ok {
		t.Fatalf("verdict %+v says no client queried, after one did", jd.Verdict)
	}
	if n := f.work(t, f.worker(t, "any")); n != 1 {
		t.Fatalf("a worker allowing everything ran %d jobs, want 1", n)
	}
	jd = f.describe(t, cids[0]).Jobs[0]
	if _, ok := reason(jd, "not-allowed"); ok {
		t.Fatalf("verdict of a job that ran: %+v, still not allowed", jd.Verdict)
	}
	if _, ok := reason(jd, "finished"); !ok {
		t.Fatalf("verdict of a job that ran: %+v, want finished", jd.Verdict)
	}
}

// TestDescribeNoQuery: a job no client looked for is reported as listed
// under a keyword no client queried; once a client queried it (and took
// it), that reason is gone (control).
func TestDescribeNoQuery(t *testing.T) {
	f := startFlow(t, 8, 92)
	cids := f.submitFile(t, describeFile)
	jd := f.describe(t, cids[0]).Jobs[0]
	r, ok := reason(jd, "no-query")
	if !ok || !strings.Contains(r.Why, `no client queried keyword "lhc"`) || !strings.Contains(r.Fix, "up client run --project lhc") {
		t.Fatalf("verdict %+v, want keyword lhc not queried, fixed by attaching a client", jd.Verdict)
	}
	for _, a := range jd.Replicas {
		if a.Error != "" || !a.Held || a.State != "open" {
			t.Fatalf("replica answer %+v, want held open", a)
		}
	}
	listed := false
	for _, a := range jd.Index {
		listed = listed || a.Listed
	}
	if !listed {
		t.Fatalf("no index node lists the job: %+v", jd.Index)
	}
	w := f.workerAllowing(t, "picky", "digest") // queries, takes nothing
	_, _ = w.RunOne(context.Background(), "lhc")
	jd = f.describe(t, cids[0]).Jobs[0]
	if _, ok := reason(jd, "no-query"); ok {
		t.Fatalf("verdict %+v after a client queried: still not queried", jd.Verdict)
	}
}

// TestDescribeSameUnit: the copy of a unit left after the only client ran
// the other one is declined as a copy of a unit it ran, and the verdict
// says it needs another client; once another client ran it, it does not
// (control).
func TestDescribeSameUnit(t *testing.T) {
	f := startFlow(t, 8, 93)
	f.submitFile(t, describeFile+"copies: 2\ncommit: false\n")
	w := f.worker(t, "only")
	if n := f.work(t, w); n != 1 {
		t.Fatalf("the only worker ran %d copies of the unit, want 1", n)
	}
	d := f.describe(t, "1")
	if len(d.Jobs) != 2 {
		t.Fatalf("unit 1 described with %d jobs, want 2", len(d.Jobs))
	}
	var waiting *project.JobDescription
	for i, jd := range d.Jobs {
		if _, ok := reason(jd, "finished"); !ok {
			waiting = &d.Jobs[i]
		}
	}
	if waiting == nil {
		t.Fatalf("both copies finished: %+v", d.Jobs)
	}
	r, ok := reason(*waiting, "same-unit")
	if !ok || !strings.Contains(r.Why, "needs another client: every client that found it ran a copy of its unit") {
		t.Fatalf("verdict of the copy left: %+v, want it needs another client", waiting.Verdict)
	}
	if n := f.work(t, f.worker(t, "other")); n != 1 {
		t.Fatalf("another worker ran %d copies, want 1", n)
	}
	for _, jd := range f.describe(t, "1").Jobs {
		if _, ok := reason(jd, "same-unit"); ok {
			t.Fatalf("verdict of job %s after another client ran it: %+v", jd.Job, jd.Verdict)
		}
	}
}

// TestDescribeUnreachable: a job none of whose nodes answers is reported
// so; while they answered, it was not (control).
func TestDescribeUnreachable(t *testing.T) {
	f := startFlow(t, 8, 94)
	cids := f.submitFile(t, describeFile)
	jd := f.describe(t, cids[0]).Jobs[0]
	if _, ok := reason(jd, "unreachable"); ok || len(jd.Replicas) != jd.Replication {
		t.Fatalf("verdict %+v with %d answers while the nodes run, want r = %d answers and none unreachable", jd.Verdict, len(jd.Replicas), jd.Replication)
	}
	for i := range f.net.Len() {
		if err := f.net.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	jd = f.describe(t, cids[0]).Jobs[0]
	r, ok := reason(jd, "unreachable")
	if !ok || !strings.Contains(r.Why, "none of its 5 nodes answered") {
		t.Fatalf("verdict %+v with every node down, want none of its 5 nodes answered", jd.Verdict)
	}
	for _, a := range jd.Replicas {
		if !strings.HasPrefix(a.Error, "unreachable: ") {
			t.Fatalf("answer %+v of a node down", a)
		}
	}
}

// TestDescribeUnknown: what the ledger does not know is refused in one
// line.
func TestDescribeUnknown(t *testing.T) {
	f := startFlow(t, 8, 95)
	if _, err := f.proj.Describe(context.Background(), f.ledger, "7"); !errors.Is(err, project.ErrNotDescribed) {
		t.Fatalf("describe an unknown unit: %v, want ErrNotDescribed", err)
	}
	if _, err := f.proj.Describe(context.Background(), f.ledger, "nonsense"); err == nil || !strings.Contains(err.Error(), "neither a job's CID nor a unit's number") {
		t.Fatalf("describe nonsense: %v", err)
	}
}
