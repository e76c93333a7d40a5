package index

import (
	"fmt"
	"testing"
	"time"
)

// benchTable holds n entries under "lhc"; about half match benchQuery.
func benchTable(b *testing.B, n int, cfg Config) *Table {
	b.Helper()
	tb := NewTable(cfg)
	rng := newRNG(1)
	for i := range n {
		tb.Put(benchEntry(i, rng.IntN(3) != 0, rng.IntN(4) == 0), t0)
	}
	return tb
}

const benchQuery = "lhc AND mem:small AND NOT bw:modem" // P = 2/3 · 3/4 = 1/2

func benchEntry(i int, small, modem bool) Entry {
	kw := []string{"lhc", "os:linux"}
	if small {
		kw = append(kw, "mem:small")
	}
	if modem {
		kw = append(kw, "bw:modem")
	}
	return entry("lhc", i, int64(i), kw...)
}

// BenchmarkSelect: a steady stream of queries, one per 10 ms, against
// 100,000 entries under one keyword. Clients alternate between the
// benchmark query and its complement, so both halves are consumed: each
// served entry is withdrawn (its job taken) 1 s later and a new job
// listed. µs/query times the benchmark query's Select alone; ns/op covers
// both queries and the upkeep.
//
// Select scans from the oldest entry, so its cost is the number of older
// entries that are quarantined or do not match: were only one half
// consumed, the other would pile up in front (BenchmarkSelectScan).
func BenchmarkSelect(b *testing.B) {
	const n = 100_000
	tb := benchTable(b, n, Config{})
	qs := []*Query{MustParse(benchQuery), MustParse("lhc AND NOT (mem:small AND NOT bw:modem)")}
	rng := newRNG(2)
	now, next := t0, n
	var inSelect time.Duration
	type due struct {
		at  int64
		job []byte
	}
	var queue []due
	for b.Loop() {
		for i, q := range qs {
			now += 5
			for len(queue) > 0 && queue[0].at <= now {
				tb.Withdraw("lhc", queue[0].job, "", queue[0].at)
				tb.Put(benchEntry(next, rng.IntN(3) != 0, rng.IntN(4) == 0), now)
				queue, next = queue[1:], next+1
			}
			start := time.Now()
			got := tb.Select(q, "lhc", 4, now, rng)
			if i == 0 {
				inSelect += time.Since(start)
			}
			for _, e := range got {
				queue = append(queue, due{now + 1000, e.Job})
			}
		}
	}
	b.ReportMetric(float64(inSelect.Nanoseconds())/1e3/float64(b.N), "µs/query")
	b.ReportMetric(float64(tb.L("lhc", now)), "l")
}

// BenchmarkSelectScan is the worst case: every entry examined, because
// l covers all 100,000 (or nothing matches).
func BenchmarkSelectScan(b *testing.B) {
	for _, c := range []struct {
		name  string
		cfg   Config
		query string
	}{
		{"l=100000", Config{LMin: 100_000, Quarantine: 1}, benchQuery},
		{"no-match", Config{}, "lhc AND nothing"},
	} {
		b.Run(c.name, func(b *testing.B) {
			tb := benchTable(b, 100_000, c.cfg)
			q := MustParse(c.query)
			rng := newRNG(2)
			now := t0
			for b.Loop() {
				now += 10
				tb.Select(q, "lhc", 4, now, rng)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/query")
		})
	}
}

func BenchmarkPut(b *testing.B) {
	tb := NewTable(Config{})
	es := make([]Entry, 1<<16)
	rng := newRNG(3)
	for i := range es {
		es[i] = benchEntry(int(rng.Uint32()), true, false)
	}
	i := 0
	for b.Loop() {
		tb.Put(es[i&(len(es)-1)], t0+int64(i))
		i++
	}
}

func BenchmarkPage(b *testing.B) {
	tb := benchTable(b, 100_000, Config{})
	q := MustParse(benchQuery)
	var after *Cursor
	for b.Loop() {
		page, more := tb.Page(q, "lhc", after, 256, t0+1)
		if !more {
			after = nil
			continue
		}
		last := page[len(page)-1]
		after = &Cursor{Created: last.Created, Job: last.Job}
	}
}

func BenchmarkParse(b *testing.B) {
	for _, s := range []string{
		benchQuery,
		"(LHC AND a) OR (LHC AND b AND NOT mem:<128MB) OR (LHC:finished c d e)",
	} {
		b.Run(fmt.Sprint(len(s)), func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
