package project

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkReports measures each report of the project page on a ledger
// of n decided units (one copy each) and n/10 waiting: what one poll of
// its endpoint costs the serving process.
func BenchmarkReports(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		l, err := OpenLedger(filepath.Join(b.TempDir(), "l.db"))
		if err != nil {
			b.Fatal(err)
		}
		done := fillLedger(b, l, "done", n, 1)
		pass(b, l, done, 1000)
		fillLedger(b, l, "waiting", n/10, 1)
		now := time.Now().Add(time.Hour)
		from, err := l.Span(now)
		if err != nil {
			b.Fatal(err)
		}
		for name, report := range map[string]func() error{
			"summary":     func() error { _, err := l.Summary(now); return err },
			"timeline":    func() error { _, err := l.Timeline(from, now, 60); return err },
			"latency":     func() error { _, err := l.Latency(0); return err },
			"validation":  func() error { _, err := l.Validation(); return err },
			"leaderboard": func() error { _, err := l.Leaderboard(20); return err },
			"stuck":       func() error { _, err := l.StuckUnits(now, StuckAfter, 20); return err },
			"results":     func() error { _, err := l.ResultsPage(0, 50); return err },
		} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				for range b.N {
					if err := report(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		l.Close()
	}
}
