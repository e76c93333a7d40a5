package project

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestStatsHarvestLatency: Stats reports the nearest-rank median and 99th
// percentile of harvested minus submitted over the results of submitted
// jobs (whatever order they were harvested in), the count of them, and
// zeros for a ledger without any; a result of a job never marked
// submitted is left out.
func TestStatsHarvestLatency(t *testing.T) {
	seq := func(n int) []int { // 1 … n ms
		out := make([]int, n)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	cases := []struct {
		name     string
		ms       []int // submit→harvest latencies, ms
		p50, p99 time.Duration
	}{
		{"none", nil, 0, 0},
		{"one", []int{1200}, 1200 * time.Millisecond, 1200 * time.Millisecond},
		{"two", []int{3000, 1000}, time.Second, 3 * time.Second},
		{"ten", []int{5, 1, 9, 3, 7, 2, 10, 4, 8, 6}, 5 * time.Millisecond, 10 * time.Millisecond},
		{"ties", []int{4, 4, 4, 9}, 4 * time.Millisecond, 9 * time.Millisecond},
		{"hundred", seq(100), 50 * time.Millisecond, 99 * time.Millisecond},
		{"thousand and one", seq(1001), 501 * time.Millisecond, 991 * time.Millisecond},
	}
	base := time.UnixMilli(1_700_000_000_000)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, _ := openTestLedger(t)
			cids := fillLedger(t, l, "b", len(c.ms)+1, 1)
			r := rand.New(rand.NewPCG(uint64(len(c.ms)), 1))
			for _, i := range r.Perm(len(c.ms)) {
				cid := cids[i][0]
				submitted := base.Add(time.Duration(i) * time.Second)
				if err := l.MarkSubmitted(map[string]int{cid: 3}, submitted); err != nil {
					t.Fatal(err)
				}
				harvested := submitted.Add(time.Duration(c.ms[i]) * time.Millisecond)
				if err := l.RecordResults([]Result{{CID: cid, Client: "w", ClientKey: []byte("w"), At: harvested}}, harvested); err != nil {
					t.Fatal(err)
				}
			}
			// The last job's result is harvested unsubmitted: left out.
			last := cids[len(c.ms)][0]
			if err := l.RecordResults([]Result{{CID: last, Client: "w", ClientKey: []byte("w"), At: base}}, base.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			st, err := l.Stats(base.Add(2 * time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if st.HarvestTimed != len(c.ms) || st.HarvestP50 != c.p50 || st.HarvestP99 != c.p99 {
				t.Fatalf("%d timed, p50 %v, p99 %v; want %d, %v, %v", st.HarvestTimed, st.HarvestP50, st.HarvestP99, len(c.ms), c.p50, c.p99)
			}
		})
	}
}

// TestHarvestLatencyWindow: the latencies are those of the latest
// results recorded, the window's worth of them, read walking the results
// backwards with no sort (the cost stays bounded by the window).
func TestHarvestLatencyWindow(t *testing.T) {
	l, _ := openTestLedger(t)
	cids := fillLedger(t, l, "b", 6, 1)
	plan := queryPlan(t, l, "harvest latencies", qHarvestLatencies, 3)
	if len(plan) != 2 || plan[0] != "SCAN r" || !strings.HasPrefix(plan[1], "SEARCH j ") {
		t.Fatalf("plan:\n  %s\nwant a walk of the results and a look-up of each one's job, no sort", strings.Join(plan, "\n  "))
	}
	base := time.UnixMilli(1_700_000_000_000)
	// Recorded in this order: the three oldest slow, the three latest fast.
	for i, d := range []time.Duration{time.Hour, time.Hour, time.Hour, 3 * time.Second, time.Second, 2 * time.Second} {
		cid, submitted := cids[i][0], base.Add(time.Duration(i)*time.Minute)
		if err := l.MarkSubmitted(map[string]int{cid: 3}, submitted); err != nil {
			t.Fatal(err)
		}
		if err := l.RecordResults([]Result{{CID: cid, Client: "w", ClientKey: []byte("w")}}, submitted.Add(d)); err != nil {
			t.Fatal(err)
		}
	}
	var s Stats
	if err := l.harvestLatency(&s, 3); err != nil {
		t.Fatal(err)
	}
	if s.HarvestTimed != 3 || s.HarvestP50 != 2*time.Second || s.HarvestP99 != 3*time.Second {
		t.Fatalf("%d timed, p50 %v, p99 %v; want the latest 3: 3, 2s, 3s", s.HarvestTimed, s.HarvestP50, s.HarvestP99)
	}
}

// TestNearestRank: the index of the nearest-rank quantile is ceil(q·n)−1,
// within 0 … n−1.
func TestNearestRank(t *testing.T) {
	for _, c := range []struct {
		n    int
		q    float64
		want int
	}{
		{1, 0.5, 0}, {1, 0.99, 0}, {2, 0.5, 0}, {2, 0.99, 1}, {10, 0.5, 4}, {10, 0.99, 9},
		{100, 0.5, 49}, {100, 0.99, 98}, {1001, 0.5, 500}, {1001, 0.99, 990}, {5, 0, 0}, {5, 1, 4},
	} {
		t.Run(fmt.Sprintf("%d@%v", c.n, c.q), func(t *testing.T) {
			if got := nearestRank(c.n, c.q); got != c.want {
				t.Fatalf("nearestRank(%d, %v) = %d, want %d", c.n, c.q, got, c.want)
			}
		})
	}
}

// queryPlan is SQLite's plan of q with args: one detail line per step.
func queryPlan(t *testing.T, l *Ledger, name, q string, args ...any) []string {
	t.Helper()
	rows, err := l.db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return plan
}
