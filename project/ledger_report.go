package project

import (
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// The reports below feed the project's web page (`up project serve`):
// each answer is bounded (top N, a fixed number of time buckets,
// percentiles over a window of results) whatever the size of the ledger.
// They only read, and so run on a ledger opened with OpenLedgerReader
// while another process harvests into it.

// MaxBuckets bounds the time buckets of a Timeline.
const MaxBuckets = 500

// Unit states of a Timeline, as the ledger's timestamps tell them.
const (
	SeriesWaiting  = "waiting"  // jobs prepared, no result harvested yet
	SeriesReturned = "returned" // a result harvested, no canonical result yet
	SeriesValid    = "valid"    // a canonical result
)

// Line is one series of a chart: points [x, y], x the end of a time
// bucket in unix seconds.
type Line struct {
	Name   string       `json:"name"`
	Points [][2]float64 `json:"points"`
}

// Timeline is the ledger's history over a span cut into buckets.
type Timeline struct {
	From   int64   `json:"from"`     // start of the span, unix seconds
	To     int64   `json:"to"`       // end of the span, unix seconds
	Bucket float64 `json:"bucket_s"` // width of a bucket, seconds
	// Units are the units in each state (SeriesWaiting, SeriesReturned,
	// SeriesValid) at the end of each bucket.
	Units []Line `json:"units"`
	// Throughput is, per bucket, the results harvested and the units
	// that got their canonical result, per minute.
	Throughput []Line `json:"throughput"`
}

// Span is the time the ledger covers: from its first batch to now (now
// alone for an empty ledger).
func (l *Ledger) Span(now time.Time) (from time.Time, err error) {
	var first sql.NullInt64
	if err := l.db.QueryRow(`SELECT MIN(created) FROM batches`).Scan(&first); err != nil {
		return now, fmt.Errorf("ledger: first batch: %w", err)
	}
	if !first.Valid || first.Int64 >= now.UnixMilli() {
		return now, nil
	}
	return time.UnixMilli(first.Int64), nil
}

// qUnitEvents gives, per unit, when its first job was prepared, when its
// first result was harvested (NULL: none yet) and, for a valid unit, when
// it became valid (status_at; NULL for a valid unit of a ledger that did
// not record it, then taken as its first result's time). It reads every
// unit: O(jobs) per call.
const qUnitEvents = `SELECT MIN(j.prepared), MIN(r.harvested), CASE WHEN u.status = 'valid' THEN COALESCE(u.status_at, MIN(r.harvested)) END
	FROM units u JOIN jobs j ON j.unit = u.id LEFT JOIN results r ON r.job = j.id GROUP BY u.id`

// Timeline reports the units by state at the end of each of buckets
// (1 … MaxBuckets) equal buckets of [from, to), and the throughput in
// each. Its cost follows the number of jobs; its answer, the buckets.
func (l *Ledger) Timeline(from, to time.Time, buckets int) (Timeline, error) {
	buckets = min(max(buckets, 1), MaxBuckets)
	f, t := from.UnixMilli(), to.UnixMilli()
	if t <= f {
		t = f + 1000
	}
	width := max((t-f+int64(buckets)-1)/int64(buckets), 1)
	t = f + width*int64(buckets)
	tl := Timeline{From: f / 1000, To: t / 1000, Bucket: float64(width) / 1000}
	// Events per bucket: index 0 holds those before from, i+1 those of
	// bucket i; events after to are not counted.
	created, returned, valid := make([]int, buckets+1), make([]int, buckets+1), make([]int, buckets+1)
	slot := func(ms int64) int {
		if ms < f {
			return 0
		}
		return int((ms-f)/width) + 1
	}
	add := func(into []int, ms sql.NullInt64) {
		if ms.Valid {
			if i := slot(ms.Int64); i <= buckets {
				into[i]++
			}
		}
	}
	rows, err := l.db.Query(qUnitEvents)
	if err != nil {
		return tl, fmt.Errorf("ledger: unit timeline: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c, r, v sql.NullInt64
		if err := rows.Scan(&c, &r, &v); err != nil {
			return tl, fmt.Errorf("ledger: unit timeline: %w", err)
		}
		if v.Valid && r.Valid && v.Int64 < r.Int64 {
			v.Int64 = r.Int64 // a clock step back: never valid before returned
		}
		add(created, c)
		add(returned, r)
		add(valid, v)
	}
	if err := rows.Err(); err != nil {
		return tl, fmt.Errorf("ledger: unit timeline: %w", err)
	}
	harvested, err := l.harvestedPerBucket(f, width, buckets)
	if err != nil {
		return tl, err
	}
	tl.Units = []Line{{Name: SeriesWaiting}, {Name: SeriesReturned}, {Name: SeriesValid}}
	tl.Throughput = []Line{{Name: "results/min"}, {Name: "units valid/min"}}
	perMin := float64(time.Minute.Milliseconds()) / float64(width)
	var nc, nr, nv int
	for i := range buckets + 1 {
		nc, nr, nv = nc+created[i], nr+returned[i], nv+valid[i]
		if i == 0 {
			continue
		}
		x := float64(f+width*int64(i)) / 1000
		tl.Units[0].Points = append(tl.Units[0].Points, [2]float64{x, float64(max(nc-nr, 0))})
		tl.Units[1].Points = append(tl.Units[1].Points, [2]float64{x, float64(max(nr-nv, 0))})
		tl.Units[2].Points = append(tl.Units[2].Points, [2]float64{x, float64(nv)})
		tl.Throughput[0].Points = append(tl.Throughput[0].Points, [2]float64{x, float64(harvested[i-1]) * perMin})
		tl.Throughput[1].Points = append(tl.Throughput[1].Points, [2]float64{x, float64(valid[i]) * perMin})
	}
	return tl, nil
}

// harvestedPerBucket counts the results harvested in each of buckets
// buckets of width ms from f (unix ms).
func (l *Ledger) harvestedPerBucket(f, width int64, buckets int) ([]int, error) {
	out := make([]int, buckets)
	rows, err := l.db.Query(`SELECT (harvested - ?1) / ?2, COUNT(*) FROM results WHERE harvested >= ?1 AND harvested < ?3 GROUP BY 1`,
		f, width, f+width*int64(buckets))
	if err != nil {
		return nil, fmt.Errorf("ledger: results per bucket: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var n int
		if err := rows.Scan(&i, &n); err != nil {
			return nil, fmt.Errorf("ledger: results per bucket: %w", err)
		}
		if i >= 0 && i < int64(buckets) {
			out[i] = n
		}
	}
	return out, rows.Err()
}

// Latency is the submit→harvest latency of the latest results: how long
// after its job was submitted each was harvested.
type Latency struct {
	Results int     `json:"results"` // results it is over (jobs with a submitted time), at most the window
	P50     float64 `json:"p50_s"`   // nearest-rank percentiles, seconds; 0 without results
	P90     float64 `json:"p90_s"`
	P99     float64 `json:"p99_s"`
	Max     float64 `json:"max_s"`
	Mean    float64 `json:"mean_s"`
}

// Latency reports the submit→harvest latency over the latest window
// results (harvestWindow when window ≤ 0).
func (l *Ledger) Latency(window int) (Latency, error) {
	if window <= 0 {
		window = harvestWindow
	}
	ms, err := l.harvestLatencies(window)
	if err != nil {
		return Latency{}, err
	}
	out := Latency{Results: len(ms)}
	if len(ms) == 0 {
		return out, nil
	}
	slices.Sort(ms)
	sec := func(v int64) float64 { return float64(v) / 1000 }
	at := func(q float64) float64 { return sec(ms[nearestRank(len(ms), q)]) }
	var sum int64
	for _, v := range ms {
		sum += v
	}
	out.P50, out.P90, out.P99, out.Max = at(0.50), at(0.90), at(0.99), sec(ms[len(ms)-1])
	out.Mean = sec(sum) / float64(len(ms))
	return out, nil
}

// Validation counts units by status and results by grade.
type Validation struct {
	Units map[string]int `json:"units"` // by status: open, valid, inconclusive
	// Results by grade: valid (made or matched the canonical result),
	// invalid (disagreed, or failed), duplicate (a client's later copy
	// of a unit), ungraded (its unit not decided yet).
	Results map[string]int `json:"results"`
	Failed  int            `json:"failed"` // results whose job failed, was killed or exited non-zero
}

// Validation reports the validation outcomes: O(results).
func (l *Ledger) Validation() (Validation, error) {
	v := Validation{Units: map[string]int{UnitOpen: 0, UnitValid: 0, UnitInconclusive: 0}, Results: map[string]int{}}
	rows, err := l.db.Query(`SELECT status, COUNT(*) FROM units GROUP BY status`)
	if err != nil {
		return v, fmt.Errorf("ledger: units by status: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return v, err
		}
		v.Units[st] = n
	}
	if err := rows.Err(); err != nil {
		return v, err
	}
	var valid, invalid, dup, ungraded int
	err = l.db.QueryRow(`SELECT COALESCE(SUM(valid = 1), 0), COALESCE(SUM(valid = 0), 0), COALESCE(SUM(valid = 2), 0),
		COALESCE(SUM(valid IS NULL), 0), COALESCE(SUM(exit_code != 0 OR error != ''), 0) FROM results`).Scan(&valid, &invalid, &dup, &ungraded, &v.Failed)
	if err != nil {
		return v, fmt.Errorf("ledger: results by grade: %w", err)
	}
	v.Results = map[string]int{"valid": valid, "invalid": invalid, "duplicate": dup, "ungraded": ungraded}
	return v, nil
}

// Leaderboard is the clients with the most credit.
type Leaderboard struct {
	Clients int      `json:"clients"` // clients with any result
	Top     []Credit `json:"top"`     // most valid results first, then by name
}

// Leaderboard reports the top limit clients by credit (valid results);
// O(results).
func (l *Ledger) Leaderboard(limit int) (Leaderboard, error) {
	lb := Leaderboard{Top: []Credit{}}
	rows, err := l.db.Query(`SELECT client, COALESCE(SUM(valid = 1), 0), COALESCE(SUM(valid = 0), 0), COALESCE(SUM(valid = 2), 0),
		COALESCE(SUM(CASE WHEN valid = 1 THEN cpu_ms ELSE 0 END), 0), COUNT(*) OVER ()
		FROM results GROUP BY client ORDER BY 2 DESC, client LIMIT ?`, max(limit, 0))
	if err != nil {
		return lb, fmt.Errorf("ledger: credit: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c Credit
		var cpu int64
		if err := rows.Scan(&c.Client, &c.Valid, &c.Invalid, &c.Duplicate, &cpu, &lb.Clients); err != nil {
			return lb, fmt.Errorf("ledger: credit: %w", err)
		}
		c.CPU = time.Duration(cpu) * time.Millisecond
		lb.Top = append(lb.Top, c)
	}
	if err := rows.Err(); err != nil || len(lb.Top) > 0 || limit > 0 {
		return lb, err
	}
	err = l.db.QueryRow(`SELECT COUNT(DISTINCT client) FROM results`).Scan(&lb.Clients)
	return lb, err
}

// Summary is the ledger at a glance.
type Summary struct {
	Now      int64          `json:"now"`   // unix seconds
	Jobs     map[string]int `json:"jobs"`  // by state
	Units    map[string]int `json:"units"` // by status
	Results  int            `json:"results"`
	LastHour int            `json:"last_hour"` // results harvested in the hour before now
	Batches  int            `json:"batches"`
	// OldestWaiting is how long ago the oldest job without a result was
	// prepared, seconds (0: none).
	OldestWaiting float64 `json:"oldest_waiting_s"`
}

// Summary counts jobs by state, units by status and results.
func (l *Ledger) Summary(now time.Time) (Summary, error) {
	s := Summary{Now: now.Unix(), Jobs: map[string]int{}, Units: map[string]int{}}
	for _, c := range []struct {
		q    string
		into map[string]int
	}{{`SELECT state, COUNT(*) FROM jobs GROUP BY state`, s.Jobs}, {`SELECT status, COUNT(*) FROM units GROUP BY status`, s.Units}} {
		if err := countBy(l.db, c.q, c.into); err != nil {
			return s, fmt.Errorf("ledger summary: %w", err)
		}
	}
	var oldest sql.NullInt64
	err := l.db.QueryRow(`SELECT (SELECT COUNT(*) FROM results), (SELECT COUNT(*) FROM results WHERE harvested >= ?),
		(SELECT COUNT(*) FROM batches), (SELECT MIN(prepared) FROM jobs WHERE state IN (?, ?))`,
		now.Add(-time.Hour).UnixMilli(), StatePrepared, StateSubmitted).Scan(&s.Results, &s.LastHour, &s.Batches, &oldest)
	if err != nil {
		return s, fmt.Errorf("ledger summary: %w", err)
	}
	if oldest.Valid {
		s.OldestWaiting = max(now.Sub(time.UnixMilli(oldest.Int64)), 0).Seconds()
	}
	return s, nil
}

// countBy runs q, rows of (key, count), into into.
func countBy(db *sql.DB, q string, into map[string]int) error {
	rows, err := db.Query(q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		into[k] = n
	}
	return rows.Err()
}
