package project

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// reportT0 is the start of the report tests' history.
var reportT0 = time.UnixMilli(1_700_000_000_000)

// fillAt records a batch of n units of copies jobs, prepared at at, and
// returns each unit's CIDs and ids.
func fillAt(t *testing.T, l *Ledger, digest string, n, copies int, at time.Time) ([][]string, []int64) {
	t.Helper()
	b := &batchRecord{digest: []byte(digest), source: digest + ".yaml", units: n, copies: copies, unitIDs: map[int]int64{}}
	var jobs []unitJob
	cids := make([][]string, n)
	for i := range n {
		for c := range copies {
			cid := fmt.Sprintf("%s-u%d-c%d", digest, i, c)
			cids[i] = append(cids[i], cid)
			jobs = append(jobs, unitJob{idx: i, PreparedJob: PreparedJob{CID: cid, Copy: c, Signed: []byte{1}, Listing: []byte{2}}})
		}
	}
	if err := l.record(b, jobs, at); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i := range n {
		ids[i] = b.unitIDs[i]
	}
	return cids, ids
}

// harvestAt records results of cids from client, with output out, at at,
// leaving every unit to validateAt (none decided as recorded), so a
// verdict can come later than its result.
func harvestAt(t *testing.T, l *Ledger, at time.Time, client, out string, cids ...string) {
	t.Helper()
	var rs []Result
	for _, c := range cids {
		rs = append(rs, Result{CID: c, Client: client, ClientKey: []byte(client), Output: []byte(out), At: at})
	}
	if _, err := l.recordResults(rs, at, false); err != nil {
		t.Fatal(err)
	}
}

// validateAt validates units as a harvest at at would, and returns their
// statuses.
func validateAt(t *testing.T, l *Ledger, at time.Time, units ...int64) []string {
	t.Helper()
	var vs []unitVerdict
	var out []string
	for _, u := range units {
		rs, err := l.UnitResults(u)
		if err != nil {
			t.Fatal(err)
		}
		_, issued, err := l.UnitOf(rs[0].CID)
		if err != nil {
			t.Fatal(err)
		}
		var copies int
		if err := l.db.QueryRow(`SELECT copies FROM units WHERE id = ?`, u).Scan(&copies); err != nil {
			t.Fatal(err)
		}
		v := Validate(rs, issued, Quorum(copies), nil)
		vs = append(vs, unitVerdict{unit: u, verdict: &v, done: true, results: len(rs)})
		out = append(out, v.Status)
	}
	if err := l.settle(nil, vs, at); err != nil {
		t.Fatal(err)
	}
	return out
}

func submitAt(t *testing.T, l *Ledger, at time.Time, cids ...string) {
	t.Helper()
	acks := map[string]int{}
	for _, c := range cids {
		acks[c] = 3
	}
	if err := l.MarkSubmitted(acks, at); err != nil {
		t.Fatal(err)
	}
}

// TestReportTimeline: units by state at the end of each bucket follow
// the ledger's timestamps — prepared, first result harvested, status_at
// of the verdict (not the result's time: u1 is validated 10 min after its
// result) — and throughput counts results and decided units per minute;
// a unit prepared after the span is not counted, one before it is.
func TestReportTimeline(t *testing.T) {
	l, _ := openTestLedger(t)
	m := func(n int) time.Time { return reportT0.Add(time.Duration(n) * time.Minute) }
	fillAt(t, l, "early", 1, 1, m(-60)) // before the span: counted waiting from the start
	cids, ids := fillAt(t, l, "b", 4, 1, m(0))
	fillAt(t, l, "late", 2, 1, m(45)) // after the span: not counted
	all := []string{cids[0][0], cids[1][0], cids[2][0], cids[3][0]}
	submitAt(t, l, m(1), all...)
	harvestAt(t, l, m(10), "w1", "a", cids[0][0])
	validateAt(t, l, m(10), ids[0])
	harvestAt(t, l, m(20), "w1", "b", cids[1][0], cids[2][0])
	validateAt(t, l, m(30), ids[1])
	tl, err := l.Timeline(m(0), m(40), 4)
	if err != nil {
		t.Fatal(err)
	}
	if tl.From != m(0).Unix() || tl.To != m(40).Unix() || tl.Bucket != 600 {
		t.Fatalf("span %d … %d by %v s; want %d … %d by 600", tl.From, tl.To, tl.Bucket, m(0).Unix(), m(40).Unix())
	}
	want := map[string][]float64{
		SeriesWaiting:     {5, 4, 2, 2},
		SeriesReturned:    {0, 0, 2, 1},
		SeriesValid:       {0, 1, 1, 2},
		"results/min":     {0, 0.1, 0.2, 0},
		"units valid/min": {0, 0.1, 0, 0.1},
	}
	for _, line := range append(tl.Units, tl.Throughput...) {
		var ys []float64
		for i, p := range line.Points {
			if p[0] != float64(m(10*(i+1)).Unix()) {
				t.Errorf("%s: point %d at %v, want the end of bucket %d", line.Name, i, p[0], i)
			}
			ys = append(ys, p[1])
		}
		if !slices.Equal(ys, want[line.Name]) {
			t.Errorf("%s: %v, want %v", line.Name, ys, want[line.Name])
		}
	}
	// Control: with the verdict's time forgotten, u1 counts valid from
	// its result (bucket 3), not from its verdict.
	if _, err := l.db.Exec(`UPDATE units SET status_at = NULL`); err != nil {
		t.Fatal(err)
	}
	tl, err = l.Timeline(m(0), m(40), 4)
	if err != nil {
		t.Fatal(err)
	}
	var ys []float64
	for _, p := range tl.Units[2].Points {
		ys = append(ys, p[1])
	}
	if !slices.Equal(ys, []float64{0, 1, 2, 2}) {
		t.Fatalf("valid without status_at: %v, want [0 1 2 2]", ys)
	}
}

// TestReportTimelineBounds: the buckets are clamped to 1 … MaxBuckets,
// and an empty or inverted span still answers.
func TestReportTimelineBounds(t *testing.T) {
	l, _ := openTestLedger(t)
	for _, c := range []struct{ ask, want int }{{0, 1}, {-3, 1}, {7, 7}, {MaxBuckets + 1, MaxBuckets}} {
		tl, err := l.Timeline(reportT0, reportT0.Add(time.Hour), c.ask)
		if err != nil {
			t.Fatal(err)
		}
		if len(tl.Units[0].Points) != c.want || len(tl.Throughput[1].Points) != c.want {
			t.Errorf("%d buckets asked: %d points, want %d", c.ask, len(tl.Units[0].Points), c.want)
		}
	}
	if tl, err := l.Timeline(reportT0, reportT0.Add(-time.Hour), 3); err != nil || len(tl.Units[0].Points) != 3 {
		t.Fatalf("inverted span: %v, %v", tl, err)
	}
	from, err := l.Span(reportT0)
	if err != nil || !from.Equal(reportT0) {
		t.Fatalf("span of an empty ledger: %v %v, want now", from, err)
	}
	fillAt(t, l, "b", 1, 1, reportT0.Add(-time.Hour))
	if from, err = l.Span(reportT0); err != nil || !from.Equal(reportT0.Add(-time.Hour)) {
		t.Fatalf("span: %v %v, want the first batch's time", from, err)
	}
}

// TestMigrateStatusAt: a ledger written before units.status_at gets it
// filled from its results — a valid unit of quorum 2 from its second
// valid result (not a later one), of quorum 1 from its first, an
// inconclusive one from its latest result, an open one not at all — and
// the timeline reads it.
func TestMigrateStatusAt(t *testing.T) {
	l, path := openTestLedger(t)
	m := func(n int) time.Time { return reportT0.Add(time.Duration(n) * time.Minute) }
	two, ids2 := fillAt(t, l, "two", 2, 3, m(0))
	one, ids1 := fillAt(t, l, "one", 2, 1, m(0))
	harvestAt(t, l, m(5), "w1", "x", two[0][0], two[1][0], one[0][0])
	harvestAt(t, l, m(7), "w2", "x", two[0][1])
	harvestAt(t, l, m(8), "w2", "y", two[1][1])
	harvestAt(t, l, m(9), "w3", "z", two[1][2])
	if got := validateAt(t, l, m(60), ids2[0], ids2[1], ids1[0]); !slices.Equal(got, []string{UnitValid, UnitInconclusive, UnitValid}) {
		t.Fatalf("verdicts %v", got)
	}
	harvestAt(t, l, m(20), "w3", "x", two[0][2]) // a late copy, graded valid
	if got := validateAt(t, l, m(61), ids2[0]); got[0] != UnitValid {
		t.Fatal(got)
	}
	if _, err := l.db.Exec(`ALTER TABLE units DROP COLUMN status_at`); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2, err := OpenLedger(path)
	if err != nil {
		t.Fatalf("open a ledger without units.status_at: %v", err)
	}
	defer l2.Close()
	for _, c := range []struct {
		unit int64
		want int64 // 0: NULL
	}{{ids2[0], m(7).UnixMilli()}, {ids2[1], m(9).UnixMilli()}, {ids1[0], m(5).UnixMilli()}, {ids1[1], 0}} {
		var at *int64
		if err := l2.db.QueryRow(`SELECT status_at FROM units WHERE id = ?`, c.unit).Scan(&at); err != nil {
			t.Fatal(err)
		}
		if (at == nil) != (c.want == 0) || (at != nil && *at != c.want) {
			t.Errorf("unit %d: status_at %v, want %d", c.unit, at, c.want)
		}
	}
	// A verdict after the migration records its time.
	harvestAt(t, l2, m(95), "w4", "x", one[1][0])
	if got := validateAt(t, l2, m(96), ids1[1]); got[0] != UnitValid {
		t.Fatal(got)
	}
	var at int64
	if err := l2.db.QueryRow(`SELECT status_at FROM units WHERE id = ?`, ids1[1]).Scan(&at); err != nil || at != m(96).UnixMilli() {
		t.Fatalf("status_at after a verdict: %d (%v), want %d", at, err, m(96).UnixMilli())
	}
}
