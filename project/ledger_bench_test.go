package project

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time the process used so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillLedger records a batch of n units × copies jobs (fake signed specs)
// and returns their CIDs by unit.
func fillLedger(tb testing.TB, l *Ledger, digest string, n, copies int) [][]string {
	tb.Helper()
	b := &batchRecord{digest: []byte(digest), source: "test", units: n, copies: copies, unitIDs: map[int]int64{}}
	var jobs []unitJob
	cids := make([][]string, n)
	for i := range n {
		for c := range copies {
			cid := fmt.Sprintf("%s-u%d-c%d", digest, i, c)
			cids[i] = append(cids[i], cid)
			jobs = append(jobs, unitJob{idx: i, PreparedJob: PreparedJob{CID: cid, Copy: c, Signed: make([]byte, 300), Listing: make([]byte, 150)}})
		}
		if len(jobs) >= 1000 || i == n-1 {
			if err := b.record(l, jobs); err != nil {
				tb.Fatal(err)
			}
			jobs = jobs[:0]
		}
	}
	return cids
}

func (b *batchRecord) record(l *Ledger, jobs []unitJob) error { return l.record(b, jobs, time.Now()) }

// BenchmarkLedgerPass measures the ledger's share of a harvest pass that
// finds k new results (one copy per unit): record them, load the units to
// validate, record the verdicts and the collected marks; per job, with a
// ledger already holding 20,000 decided jobs.
func BenchmarkLedgerPass(b *testing.B) {
	for _, k := range []int{8, 64, 256} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			l, err := OpenLedger(filepath.Join(b.TempDir(), "l.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			old := fillLedger(b, l, "old", 20000, 1)
			pass(b, l, old, 20000)
			cids := fillLedger(b, l, "new", k*b.N, 1)
			b.ResetTimer()
			cpu0 := processCPU()
			for i := range b.N {
				pass(b, l, cids[i*k:(i+1)*k], k)
			}
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N*k), "cpu-µs/job")
		})
	}
}

func pass(tb testing.TB, l *Ledger, units [][]string, k int) {
	tb.Helper()
	now := time.Now()
	for start := 0; start < len(units); start += k {
		var rs []Result
		var done []string
		for _, u := range units[start:min(start+k, len(units))] {
			rs = append(rs, Result{CID: u[0], Client: "w", ClientKey: make([]byte, 32), Output: []byte("ok"), At: now})
			done = append(done, u[0])
		}
		if err := l.RecordResults(rs, now); err != nil {
			tb.Fatal(err)
		}
		for after, more := int64(0), true; more; {
			pg, err := l.validateQueued(after, HarvestOptions{}, done, now)
			if err != nil {
				tb.Fatal(err)
			}
			after, more, done = pg.last, pg.more, nil
		}
	}
}
