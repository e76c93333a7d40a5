package project

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// reportLedger is a small history: units of two copies, w1 and w2 agree
// on unit 0, w3 lies on unit 1 (its other copy waits), w2 returns both
// copies of unit 2 (inconclusive), unit 3 failed once; unit 4 waits.
func reportLedger(t *testing.T) (*Ledger, [][]string) {
	t.Helper()
	l, _ := openTestLedger(t)
	m := func(n int) time.Time { return reportT0.Add(time.Duration(n) * time.Minute) }
	cids, ids := fillAt(t, l, "b", 5, 2, m(0))
	var all []string
	for _, u := range cids {
		all = append(all, u...)
	}
	submitAt(t, l, m(1), all...)
	harvestAt(t, l, m(2), "w1", "zero", cids[0][0])
	harvestAt(t, l, m(3), "w2", "zero", cids[0][1])
	harvestAt(t, l, m(4), "w3", "lie", cids[1][0])
	harvestAt(t, l, m(5), "w2", "two", cids[2][0])
	harvestAt(t, l, m(6), "w2", "two", cids[2][1])
	if err := l.RecordResults([]Result{{CID: cids[3][0], Client: "w1", ClientKey: []byte("w1"), ExitCode: 1, Error: "boom"}}, m(7)); err != nil {
		t.Fatal(err)
	}
	validateAt(t, l, m(8), ids[0], ids[1], ids[2], ids[3])
	return l, cids
}

// TestReportValidationAndCredit: units by status, results by grade and
// the failed ones; the leaderboard ranks by valid results and bounds the
// list, not the count of clients.
func TestReportValidationAndCredit(t *testing.T) {
	l, _ := reportLedger(t)
	v, err := l.Validation()
	if err != nil {
		t.Fatal(err)
	}
	wantUnits := map[string]int{UnitOpen: 3, UnitValid: 1, UnitInconclusive: 1}
	wantResults := map[string]int{"valid": 2, "invalid": 0, "duplicate": 0, "ungraded": 4}
	if !maps.Equal(v.Units, wantUnits) || !maps.Equal(v.Results, wantResults) || v.Failed != 1 {
		t.Fatalf("validation %+v; want units %v, results %v, 1 failed", v, wantUnits, wantResults)
	}
	lb, err := l.Leaderboard(2)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Clients != 3 || len(lb.Top) != 2 || lb.Top[0].Client != "w1" || lb.Top[0].Valid != 1 || lb.Top[1].Client != "w2" || lb.Top[1].Valid != 1 {
		t.Fatalf("leaderboard %+v", lb)
	}
	if lb, err = l.Leaderboard(0); err != nil || lb.Clients != 3 || len(lb.Top) != 0 {
		t.Fatalf("leaderboard of 0: %+v %v", lb, err)
	}
}

// TestReportLatency: percentiles, maximum and mean of harvested minus
// submitted over the latest results; none without results.
func TestReportLatency(t *testing.T) {
	l, _ := openTestLedger(t)
	if lat, err := l.Latency(0); err != nil || lat != (Latency{}) {
		t.Fatalf("empty ledger: %+v %v", lat, err)
	}
	cids, _ := fillAt(t, l, "b", 100, 1, reportT0)
	for i := range 100 {
		submitAt(t, l, reportT0, cids[i][0])
		harvestAt(t, l, reportT0.Add(time.Duration(i+1)*time.Second), "w", "x", cids[i][0])
	}
	lat, err := l.Latency(0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Latency{Results: 100, P50: 50, P90: 90, P99: 99, Max: 100, Mean: 50.5}); lat != want {
		t.Fatalf("latency %+v, want %+v", lat, want)
	}
	if lat, err = l.Latency(10); err != nil || lat.Results != 10 || lat.P50 != 95 {
		t.Fatalf("window of 10: %+v %v, want the latest 10 (p50 95 s)", lat, err)
	}
}

// TestReportResultsPage: results latest first, paged, with grade,
// canonical mark and size; ResultOf returns one with its output, and an
// unknown job is ErrNoResult.
func TestReportResultsPage(t *testing.T) {
	l, cids := reportLedger(t)
	p, err := l.ResultsPage(0, 4)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, r := range p.Results {
		jobs = append(jobs, r.Job)
	}
	if p.Total != 6 || !slices.Equal(jobs, []string{cids[3][0], cids[2][1], cids[2][0], cids[1][0]}) {
		t.Fatalf("page 1: total %d, jobs %v", p.Total, jobs)
	}
	if r := p.Results[0]; r.ExitCode != 1 || r.Error != "boom" || r.Grade != "" || r.Batch != "b.yaml" || r.Index != 3 {
		t.Fatalf("failed result row %+v", r)
	}
	p, err = l.ResultsPage(4, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Results) != 2 || p.Offset != 4 {
		t.Fatalf("page 2: %+v", p)
	}
	last := p.Results[1]
	if last.Job != cids[0][0] || last.Grade != "valid" || !last.Canonical || last.Size != 4 || last.Client != "w1" ||
		!last.Harvested.Equal(reportT0.Add(2*time.Minute)) {
		t.Fatalf("first result harvested: %+v", last)
	}
	if p.Results[0].Canonical {
		t.Fatalf("%s marked canonical too", p.Results[0].Job)
	}
	r, idx, err := l.ResultOf(cids[0][1])
	if err != nil || string(r.Output) != "zero" || idx != 0 || r.Client != "w2" || r.Valid == nil || !*r.Valid {
		t.Fatalf("ResultOf: %+v %d %v", r, idx, err)
	}
	if _, _, err := l.ResultOf(cids[4][0]); !errors.Is(err, ErrNoResult) {
		t.Fatalf("ResultOf a job without a result: %v, want ErrNoResult", err)
	}
}

// TestReportSummary: jobs by state, units by status, results, those of
// the last hour and the oldest job waiting.
func TestReportSummary(t *testing.T) {
	l, _ := reportLedger(t)
	s, err := l.Summary(reportT0.Add(65 * time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if s.Results != 6 || s.LastHour != 3 || s.Batches != 1 || s.Jobs[StateSubmitted] != 4 || s.Jobs[StateHarvested] != 6 ||
		s.Units[UnitOpen] != 3 || s.OldestWaiting != 3900 {
		t.Fatalf("summary %+v", s)
	}
}

// TestLedgerReader: a reader answers the reports while a writer holds it
// open, sees each commit, never writes (the control: the same statement
// through the writer succeeds), and a writer's commit does not wait for a
// reader's open query.
func TestLedgerReader(t *testing.T) {
	if _, err := OpenLedgerReader(filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Fatal("a reader opened a ledger that does not exist")
	}
	w, path := openTestLedger(t)
	cids, _ := fillAt(t, w, "b", 3, 1, reportT0)
	r, err := OpenLedgerReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const del = `DELETE FROM to_validate`
	if _, err := r.db.Exec(del); err == nil {
		t.Fatal("the reader wrote")
	}
	if _, err := w.db.Exec(del); err != nil {
		t.Fatalf("control: the writer cannot run %q: %v", del, err)
	}
	rows, err := r.db.Query(`SELECT cid FROM jobs`)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no jobs")
	}
	// The reader's query is open: the writer commits regardless.
	harvestAt(t, w, reportT0.Add(time.Minute), "w1", "x", cids[0][0])
	rows.Close()
	s, err := r.Summary(reportT0.Add(2 * time.Minute))
	if err != nil || s.Results != 1 {
		t.Fatalf("reader after a commit: %+v %v, want 1 result", s, err)
	}
}
