package project

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// harvestWindow is how many results, the latest harvested, the
// submit→harvest latency quantiles are over.
const harvestWindow = 100_000

// qHarvestLatencies lists the submit→harvest latencies, in ms, of the
// latest results (at most ?), latest first: a result's harvested time
// less its job's submitted time (both unix ms). Results are never
// deleted, so their rowids follow the order they were recorded in; the
// CROSS JOIN walks results backwards by rowid and looks each job up by
// its id, with no sort. Jobs never marked submitted (a result harvested
// while the job was still prepared) are left out.
const qHarvestLatencies = `SELECT r.harvested - j.submitted FROM results r CROSS JOIN jobs j ON j.id = r.job
	WHERE j.submitted IS NOT NULL ORDER BY r.rowid DESC LIMIT ?`

// harvestLatency sets s.HarvestTimed, s.HarvestP50 and s.HarvestP99 from
// the submit→harvest latencies of the latest window results (of jobs
// with a submitted time; Stats' window is harvestWindow): how many there
// are, and their nearest-rank median and 99th percentile, sorted in
// memory (8 bytes a result). Its cost is bounded by the window, whatever
// the size of the ledger.
func (l *Ledger) harvestLatency(s *Stats, window int) error {
	ms, err := l.harvestLatencies(window)
	if err != nil {
		return err
	}
	s.HarvestTimed = len(ms)
	if len(ms) == 0 {
		return nil
	}
	slices.Sort(ms)
	at := func(q float64) time.Duration { return time.Duration(ms[nearestRank(len(ms), q)]) * time.Millisecond }
	s.HarvestP50, s.HarvestP99 = at(0.50), at(0.99)
	return nil
}

// harvestLatencies returns the submit→harvest latencies, in ms, of the
// latest window results of jobs with a submitted time, latest first.
func (l *Ledger) harvestLatencies(window int) ([]int64, error) {
	st, err := l.stmt(qHarvestLatencies)
	if err != nil {
		return nil, err
	}
	rows, err := st.Query(window)
	if err != nil {
		return nil, fmt.Errorf("ledger: submit→harvest latencies: %w", err)
	}
	defer rows.Close()
	var ms []int64
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			return nil, fmt.Errorf("ledger: submit→harvest latencies: %w", err)
		}
		ms = append(ms, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: submit→harvest latencies: %w", err)
	}
	return ms, nil
}

// nearestRank returns the index, in ascending order, of the nearest-rank
// q-quantile (0 < q ≤ 1) of n values: ceil(q·n)−1.
func nearestRank(n int, q float64) int {
	return max(0, min(n-1, int(math.Ceil(q*float64(n)))-1))
}
