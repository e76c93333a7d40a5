package project

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/job"
)

// processCPU is the CPU time the process used so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillLedger records a batch of n units × copies jobs (fake signed specs)
// and returns their CIDs by unit, named "digest-uN-cM".
func fillLedger(tb testing.TB, l *Ledger, digest string, n, copies int) [][]string {
	return fillLedgerNamed(tb, l, digest, n, copies, func(s string) string { return s })
}

// fillLedgerNamed is fillLedger with each CID name(the fillLedger name).
func fillLedgerNamed(tb testing.TB, l *Ledger, digest string, n, copies int, name func(string) string) [][]string {
	tb.Helper()
	b := &batchRecord{digest: []byte(digest), source: "test", units: n, copies: copies, unitIDs: map[int]int64{}}
	var jobs []unitJob
	cids := make([][]string, n)
	for i := range n {
		for c := range copies {
			cid := name(fmt.Sprintf("%s-u%d-c%d", digest, i, c))
			cids[i] = append(cids[i], cid)
			jobs = append(jobs, unitJob{idx: i, PreparedJob: PreparedJob{CID: cid, Copy: c, Signed: make([]byte, 390), Listing: make([]byte, 340)}})
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

// benchCID is a job CID (as Signed.CID makes them) named by seed.
func benchCID(seed string) string {
	return (&job.Signed{Spec: []byte(seed), Sig: make([]byte, 64)}).CID().String()
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
		done := recordPage(tb, l, units[start:min(start+k, len(units))], now)
		validateCollect(tb, l, done, now)
	}
}

// recordPage records a good result of each unit's first job and returns
// their CIDs.
func recordPage(tb testing.TB, l *Ledger, units [][]string, now time.Time) []string {
	tb.Helper()
	var rs []Result
	var done []string
	for _, u := range units {
		rs = append(rs, Result{CID: u[0], Client: "w", ClientKey: make([]byte, 32), Output: []byte("ok"), At: now})
		done = append(done, u[0])
	}
	if err := l.RecordResults(rs, now); err != nil {
		tb.Fatal(err)
	}
	return done
}

// validateCollect validates the queued units and marks done collected.
func validateCollect(tb testing.TB, l *Ledger, done []string, now time.Time) {
	tb.Helper()
	for after, more := int64(0), true; more; {
		pg, err := l.validateQueued(after, HarvestOptions{}, done, now)
		if err != nil {
			tb.Fatal(err)
		}
		after, more, done = pg.last, pg.more, nil
	}
}

// BenchmarkLedgerLifecycle measures the ledger's whole share of a job as
// up bench drives it, per job, pages of 64 jobs: recorded before it is
// sent (record), acknowledged (MarkSubmitted), its result recorded
// (RecordResults), validated and marked collected (validateQueued), and
// credited (IssueReceipts, a receipt per page), in a ledger already
// holding 20,000 decided and credited jobs; also per part (p0 record,
// p1 acknowledge, p2 results, p3 validate and collect, p4 receipts). It
// is the figure a leaner ledger must cut (docs/design.md, "the
// project's ledger floor").
func BenchmarkLedgerLifecycle(b *testing.B) {
	const page = 64
	l, err := OpenLedger(filepath.Join(b.TempDir(), "l.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	old := fillLedgerNamed(b, l, "old", 20000, 1, benchCID)
	pass(b, l, old, 20000)
	sign := func(r *credit.Receipt) (*credit.Signed, error) {
		return &credit.Signed{Receipt: make([]byte, 100), Sig: make([]byte, 64)}, nil
	}
	if _, err := l.IssueReceipts(sign, time.Now()); err != nil { // the old jobs' credit, before the clock
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := processCPU()
	var ph [5]time.Duration
	defer func() {
		for i, d := range ph {
			b.ReportMetric(float64(d.Microseconds())/float64(b.N*page), fmt.Sprintf("p%d-µs/job", i))
		}
	}()
	for i := range b.N {
		c0 := processCPU()
		cids := fillLedgerNamed(b, l, fmt.Sprintf("new%d", i), page, 1, benchCID)
		c1 := processCPU()
		ph[0] += c1 - c0
		acks := make(map[string]int, page)
		for _, u := range cids {
			acks[u[0]] = 5
		}
		if err := l.MarkSubmitted(acks, time.Now()); err != nil {
			b.Fatal(err)
		}
		c2 := processCPU()
		ph[1] += c2 - c1
		now := time.Now()
		done := recordPage(b, l, cids, now)
		c3 := processCPU()
		ph[2] += c3 - c2
		validateCollect(b, l, done, now)
		c4 := processCPU()
		ph[3] += c4 - c3
		if _, err := l.IssueReceipts(sign, time.Now()); err != nil {
			b.Fatal(err)
		}
		ph[4] += processCPU() - c4
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N*page), "cpu-µs/job")
}
