package index

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// modelEntry is the reference model's view of one entry.
type modelEntry struct {
	e                     Entry // Keyword, Job, Created, Keywords
	expires, held, served int64
}

// model is a plain map reference for Table.
type model struct {
	cfg Config
	m   map[string]map[string]*modelEntry
}

func (m *model) put(e Entry, now int64) bool {
	b := m.m[e.Keyword]
	if b == nil {
		b = map[string]*modelEntry{}
		m.m[e.Keyword] = b
	}
	if old := b[string(e.Job)]; old != nil {
		old.expires = now + m.cfg.Expiry
		return false
	}
	b[string(e.Job)] = &modelEntry{e: e, expires: now + m.cfg.Expiry}
	return true
}

func (m *model) withdraw(kw string, job []byte) bool {
	b := m.m[kw]
	if b[string(job)] == nil {
		return false
	}
	delete(b, string(job))
	if len(b) == 0 {
		delete(m.m, kw)
	}
	return true
}

func (m *model) expire(now int64) int {
	n := 0
	for kw, b := range m.m {
		for j, e := range b {
			if now >= e.expires {
				delete(b, j)
				n++
			}
		}
		if len(b) == 0 {
			delete(m.m, kw)
		}
	}
	return n
}

// live lists kw's unexpired matching entries, oldest first; eligible
// also drops the quarantined.
func (m *model) live(q *Query, kw string, now int64, eligible bool) []*modelEntry {
	var out []*modelEntry
	for _, e := range m.m[kw] {
		if now < e.expires && (!eligible || now >= e.held) && q.Match(e.e.Keywords) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *modelEntry) int { return cmpEntry(a.e, b.e) })
	return out
}

func (m *model) counts() map[string]int {
	out := map[string]int{}
	for kw, b := range m.m {
		out[kw] = len(b)
	}
	return out
}

func TestTableAgainstModel(t *testing.T) {
	primaries := []string{"k1", "k2", "k3"}
	queries := []string{"k1", "k1 AND x", "k2 AND NOT y", "(x OR y) AND k3", "NOT z", "x y z"}
	for seed := range uint64(40) {
		rng := newRNG(100 + seed)
		cfg := Config{Expiry: 10_000, Quarantine: 3000, LMin: 1 + rng.IntN(6), LFactor: 0.5 + 4*rng.Float64(), DefaultDelay: 1000}
		tb := NewTable(cfg)
		ref := &model{cfg: tb.Config(), m: map[string]map[string]*modelEntry{}}
		// A job's entry under a keyword has fixed Created and Keywords.
		mk := func(kw string, j int) Entry {
			var extra []string
			for i, k := range []string{"x", "y", "z"} {
				if (j>>i)&1 == 1 {
					extra = append(extra, k)
				}
			}
			return entry(kw, j, int64(j%9), extra...)
		}
		now := t0
		for step := range 600 {
			kw := primaries[rng.IntN(len(primaries))]
			j := rng.IntN(30)
			ctx := fmt.Sprintf("seed %d step %d", seed, step)
			switch op := rng.IntN(10); {
			case op < 4:
				if got, want := tb.Put(mk(kw, j), now), ref.put(mk(kw, j), now); got != want {
					t.Fatalf("%s: Put = %v, model %v", ctx, got, want)
				}
			case op < 6:
				if got, want := tb.Withdraw(kw, jobKey(j), "", now), ref.withdraw(kw, jobKey(j)); got != want {
					t.Fatalf("%s: Withdraw = %v, model %v", ctx, got, want)
				}
			case op == 6:
				if got, want := tb.Expire(now), ref.expire(now); got != want {
					t.Fatalf("%s: Expire = %d, model %d", ctx, got, want)
				}
			case op == 7:
				q := MustParse(queries[rng.IntN(len(queries))])
				want := ref.live(q, kw, now, false)
				got, more := tb.Page(q, kw, nil, 1000, now)
				if more || len(got) != len(want) {
					t.Fatalf("%s: Page %q = %d entries (more %v), model %d", ctx, q, len(got), more, len(want))
				}
				for i := range got {
					if string(got[i].Job) != string(want[i].e.Job) {
						t.Fatalf("%s: Page[%d] = %s, model %s", ctx, i, got[i].Job, want[i].e.Job)
					}
				}
			default:
				q := MustParse(queries[rng.IntN(len(queries))])
				n := rng.IntN(5)
				elig := ref.live(q, kw, now, true)
				got := tb.Select(q, kw, n, now, rng)
				checkSelect(t, ctx, tb, ref, q, kw, n, now, elig, got)
			}
			total := 0
			for _, c := range ref.counts() {
				total += c
			}
			if tb.Len() != total {
				t.Fatalf("%s: Len = %d, model %v", ctx, tb.Len(), ref.counts())
			}
			if got, want := tb.Keywords(), ref.counts(); !maps.Equal(got, want) {
				t.Fatalf("%s: Keywords = %v, model %v", ctx, got, want)
			}
			e, ok := tb.Get(kw, jobKey(j))
			me := ref.m[kw][string(jobKey(j))]
			if ok != (me != nil) || ok && (e.Expires != me.expires || e.Held != me.held || e.Served != me.served || e.Created != me.e.Created) {
				t.Fatalf("%s: Get = %+v, %v; model %+v", ctx, e, ok, me)
			}
			now += int64(rng.IntN(1500))
		}
	}
}

func checkSelect(t *testing.T, ctx string, tb *Table, ref *model, q *Query, kw string, n int, now int64, elig []*modelEntry, got []Entry) {
	t.Helper()
	if n <= 0 || ref.m[kw] == nil {
		if got != nil {
			t.Fatalf("%s: Select n=%d under %q = %v", ctx, n, kw, jobs(got))
		}
		return
	}
	if want := min(n, len(elig)); len(got) != want {
		t.Fatalf("%s: Select %q n=%d = %d entries, %d eligible", ctx, q, n, len(got), len(elig))
	}
	if !slices.IsSortedFunc(got, cmpEntry) {
		t.Fatalf("%s: Select not in age order: %v", ctx, jobs(got))
	}
	l := max(tb.L(kw, now), n)
	seen := map[string]bool{}
	for _, e := range got {
		if seen[string(e.Job)] {
			t.Fatalf("%s: duplicate pick %s", ctx, e.Job)
		}
		seen[string(e.Job)] = true
		r := slices.IndexFunc(elig, func(m *modelEntry) bool { return string(m.e.Job) == string(e.Job) })
		if r < 0 || r >= l {
			t.Fatalf("%s: picked %s at eligible rank %d (l %d)", ctx, e.Job, r, l)
		}
		if !q.Match(e.Keywords) || e.Keyword != kw || e.Held != now+ref.cfg.Quarantine || e.Served != now {
			t.Fatalf("%s: picked %+v", ctx, e)
		}
		me := elig[r]
		me.held, me.served = now+ref.cfg.Quarantine, now
	}
}
