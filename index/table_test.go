package index

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
)

// t0 is a realistic clock start: the estimators treat time 0 as "never".
const t0 = int64(1_700_000_000_000)

func jobKey(i int) []byte { return []byte(fmt.Sprintf("job%05d", i)) }

func entry(kw string, job int, created int64, keywords ...string) Entry {
	all := append([]string{kw}, keywords...)
	slices.Sort(all)
	return Entry{Keyword: kw, Job: jobKey(job), Project: "p", Created: created, Keywords: slices.Compact(all)}
}

func cmpEntry(a, b Entry) int {
	if c := cmp.Compare(a.Created, b.Created); c != 0 {
		return c
	}
	return bytes.Compare(a.Job, b.Job)
}

func jobs(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Job)
	}
	return out
}

func mustGet(t *testing.T, tb *Table, kw string, job int) Entry {
	t.Helper()
	e, ok := tb.Get(kw, jobKey(job))
	if !ok {
		t.Fatalf("Get(%q, %d): missing", kw, job)
	}
	return e
}

func TestConfigDefaults(t *testing.T) {
	got := NewTable(Config{}).Config()
	want := Config{Expiry: 16 * 60_000, Quarantine: 2 * 60_000, LMin: 8, LFactor: 4, RateWindow: 60_000, DefaultDelay: 2000}
	if got != want {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	custom := Config{Expiry: 1, Quarantine: 2, LMin: 3, LFactor: 0.5, RateWindow: 5, DefaultDelay: 6}
	if got := NewTable(custom).Config(); got != custom {
		t.Errorf("custom = %+v, want %+v", got, custom)
	}
}

func TestPutRefreshWithdrawGet(t *testing.T) {
	tb := NewTable(Config{Expiry: 1000, Quarantine: 500, LMin: 100})
	e := entry("lhc", 1, 10, "mem:small")
	e.Expires, e.Held, e.Served = 1, t0*2, 7 // ignored by Put
	if !tb.Put(e, t0) {
		t.Fatal("Put of a new entry returned false")
	}
	if got := mustGet(t, tb, "lhc", 1); got.Expires != t0+1000 || got.Held != 0 || got.Served != 0 || got.Created != 10 || got.Project != "p" {
		t.Fatalf("after Put: %+v", got)
	}
	tb.Put(entry("lhc", 2, 20), t0)
	tb.Put(entry("cms", 1, 5), t0) // same job, another keyword: a separate entry
	if tb.Len() != 3 || !maps.Equal(tb.Keywords(), map[string]int{"lhc": 2, "cms": 1}) {
		t.Fatalf("Len %d Keywords %v", tb.Len(), tb.Keywords())
	}

	// Serve job 1, then rewrite it: expiry extends, quarantine stands.
	got := tb.Select(MustParse("lhc"), "lhc", 2, t0+100, newRNG(1))
	if len(got) != 2 {
		t.Fatalf("Select = %v", jobs(got))
	}
	if tb.Put(entry("lhc", 1, 99, "other"), t0+300) {
		t.Fatal("Put of a held entry returned true")
	}
	r := mustGet(t, tb, "lhc", 1)
	if r.Expires != t0+1300 || r.Held != t0+600 || r.Served != t0+100 || r.Created != 10 {
		t.Fatalf("after refresh: %+v", r)
	}
	if tb.Len() != 3 {
		t.Fatalf("refresh changed Len to %d", tb.Len())
	}

	if _, ok := tb.Get("lhc", jobKey(9)); ok {
		t.Error("Get of a missing job succeeded")
	}
	if _, ok := tb.Get("nope", jobKey(1)); ok {
		t.Error("Get under a missing keyword succeeded")
	}
	if tb.Withdraw("lhc", jobKey(9), "", t0) || tb.Withdraw("nope", jobKey(1), "", t0) {
		t.Error("Withdraw of a missing entry returned true")
	}
	if !tb.Withdraw("lhc", jobKey(1), "", t0+400) {
		t.Fatal("Withdraw returned false")
	}
	if tb.Withdraw("lhc", jobKey(1), "", t0+400) {
		t.Error("second Withdraw returned true")
	}
	if _, ok := tb.Get("lhc", jobKey(1)); ok {
		t.Error("Get after Withdraw succeeded")
	}
	if _, ok := tb.Get("cms", jobKey(1)); !ok {
		t.Error("Withdraw under lhc removed the cms entry")
	}
	tb.Withdraw("lhc", jobKey(2), "", t0+400)
	if tb.Len() != 1 || !maps.Equal(tb.Keywords(), map[string]int{"cms": 1}) {
		t.Fatalf("Len %d Keywords %v", tb.Len(), tb.Keywords())
	}
	// A withdrawn entry put again is new and unquarantined.
	if !tb.Put(entry("lhc", 1, 10), t0+500) || mustGet(t, tb, "lhc", 1).Held != 0 {
		t.Error("re-Put after Withdraw is not fresh")
	}
}

// nearFar returns two writer names, the first nearer job j's position.
func nearFar(j int) (near, far string) {
	near, far = "A", "B"
	if keyspace.CloserTo(keyspace.KeyPos(jobKey(j)), keyspace.PeerPos([]byte(far)), keyspace.PeerPos([]byte(near))) {
		near, far = far, near
	}
	return near, far
}

// TestWithdrawByWriter: only an entry's author removes it, so a job's old
// writer (after a move) cannot withdraw its new writer's entry; a
// hand-over of unknown writer can be withdrawn by any node.
func TestWithdrawByWriter(t *testing.T) {
	tb := NewTable(Config{Expiry: 1000})
	near, far := nearFar(1)
	old := entry("lhc", 1, 10)
	old.Writer = far
	tb.Put(old, 0)
	again := entry("lhc", 1, 10)
	again.Writer = near // the new writer, nearer the job, rewrites the entry
	tb.Put(again, 1)
	if tb.Withdraw("lhc", jobKey(1), far, 2) {
		t.Fatal("the old writer withdrew the new writer's entry")
	}
	if got := mustGet(t, tb, "lhc", 1).Writer; got != near {
		t.Fatalf("writer %q, want %q", got, near)
	}
	if !tb.Withdraw("lhc", jobKey(1), near, 3) {
		t.Fatal("the writer could not withdraw its entry")
	}
	tb.Put(entry("lhc", 2, 10), 0) // writer unknown
	if !tb.Withdraw("lhc", jobKey(2), "C", 1) {
		t.Fatal("an entry of unknown writer was kept")
	}
	unwritten := entry("lhc", 3, 10)
	unwritten.Writer = "B"
	tb.Put(unwritten, 0)
	tb.Put(entry("lhc", 3, 10), 1) // a rewrite naming no writer keeps B
	if tb.Withdraw("lhc", jobKey(3), "C", 2) || !tb.Withdraw("lhc", jobKey(3), "", 2) {
		t.Fatal("writer kept by a writerless rewrite, or unconditional withdraw refused")
	}
}

// TestAuthorship: of two nodes that both take themselves for a job's
// closest, the nearer keeps the entry: the farther one's rewrite does not
// make it the author, so its withdrawal (once it sees the nearer node)
// leaves the entry the nearer one keeps written. An author silent for
// Expiry is taken to be gone.
func TestAuthorship(t *testing.T) {
	tests := []struct {
		name       string
		first      string // "near" or "far": who wrote the entry first
		second     int64  // when the other rewrote it, ms after the first
		withdrawer string // who withdraws at second+1
		removed    bool
	}{
		{"farther rewrite keeps the nearer author", "near", 10, "far", false},
		{"nearer author still withdraws", "near", 10, "near", true},
		{"nearer rewrite takes over", "far", 10, "near", true},
		{"farther writer loses its authorship", "far", 10, "far", false},
		{"silent author gone after Expiry", "near", 1000, "far", true},
		{"silent author kept before Expiry", "near", 999, "far", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := NewTable(Config{Expiry: 1000})
			near, far := nearFar(7)
			name := map[string]string{"near": near, "far": far}
			other := map[string]string{"near": far, "far": near}
			e := entry("lhc:finished", 7, 10)
			e.Writer = name[tc.first]
			tb.Put(e, t0)
			e.Writer = other[tc.first]
			tb.Put(e, t0+tc.second)
			if got := tb.Withdraw("lhc:finished", jobKey(7), name[tc.withdrawer], t0+tc.second+1); got != tc.removed {
				t.Fatalf("withdraw by the %s writer removed the entry: %v, want %v", tc.withdrawer, got, tc.removed)
			}
		})
	}
}

func TestExpire(t *testing.T) {
	tb := NewTable(Config{Expiry: 1000})
	for i := range 10 {
		tb.Put(entry("k", i, int64(i)), t0+int64(i)*100) // expires t0+1000+100i
	}
	tb.Put(entry("other", 0, 0), t0)
	tb.Put(entry("k", 0, 0), t0+950) // refreshed: expires t0+1950
	if n := tb.Expire(t0 + 999); n != 0 {
		t.Fatalf("Expire before any expiry = %d", n)
	}
	if n := tb.Expire(t0 + 1200); n != 3 { // k1, k2 (at exactly its expiry) and other0
		t.Fatalf("Expire = %d, want 3", n)
	}
	for i, want := range []bool{true, false, false, true} {
		if _, ok := tb.Get("k", jobKey(i)); ok != want {
			t.Errorf("k%d present = %v, want %v", i, ok, want)
		}
	}
	if tb.Len() != 8 || !maps.Equal(tb.Keywords(), map[string]int{"k": 8}) {
		t.Fatalf("Len %d Keywords %v", tb.Len(), tb.Keywords())
	}
	if n := tb.Expire(t0 + 1e6); n != 8 || tb.Len() != 0 || len(tb.Keywords()) != 0 {
		t.Fatalf("Expire all = %d, Len %d, Keywords %v", n, tb.Len(), tb.Keywords())
	}
}

func TestSelectFiltersAndQuarantines(t *testing.T) {
	const q = 500
	tb := NewTable(Config{Expiry: 10_000, Quarantine: q, LMin: 1000})
	var want []string
	for i := range 40 {
		var e Entry
		switch i % 4 {
		case 0:
			e = entry("lhc", i, int64(40-i), "mem:small") // matches
		case 1:
			e = entry("lhc", i, int64(40-i), "mem:small", "bw:modem") // excluded by NOT
		case 2:
			e = entry("lhc", i, int64(40-i)) // lacks mem:small
		case 3:
			e = entry("lhc", i, int64(40-i), "mem:small") // matches, but expires early
		}
		put := t0 + 5000
		if i%4 == 3 {
			put = t0
		}
		tb.Put(e, put)
		if i%4 == 0 {
			want = append(want, string(e.Job))
		}
	}
	tb.Put(entry("cms", 100, 0, "mem:small"), t0+5000)
	slices.Reverse(want) // older Created for higher i
	query := MustParse("lhc AND mem:small AND NOT bw:modem")
	now := t0 + 10_000 // the i%4 == 3 entries have just expired, unremoved
	rng := newRNG(2)

	if got := tb.Select(query, "lhc", 0, now, rng); got != nil {
		t.Errorf("n=0: %v", jobs(got))
	}
	if got := tb.Select(query, "none", 5, now, rng); got != nil {
		t.Errorf("missing keyword: %v", jobs(got))
	}
	first := tb.Select(query, "lhc", 4, now, rng)
	if len(first) != 4 || !slices.IsSortedFunc(first, cmpEntry) {
		t.Fatalf("first = %v", jobs(first))
	}
	for _, e := range first {
		if !slices.Contains(want, string(e.Job)) || e.Held != now+q || e.Served != now {
			t.Errorf("served %s (Held %d Served %d)", e.Job, e.Held, e.Served)
		}
		if g, _ := tb.Get("lhc", e.Job); g.Held != now+q || g.Served != now {
			t.Errorf("stored %s not quarantined: %+v", e.Job, g)
		}
	}
	rest := tb.Select(query, "lhc", 100, now+1, rng)
	if len(rest) != len(want)-4 {
		t.Fatalf("rest = %d entries, want %d", len(rest), len(want)-4)
	}
	all := append(jobs(first), jobs(rest)...)
	slices.Sort(all)
	if w := slices.Sorted(slices.Values(want)); !slices.Equal(all, w) {
		t.Fatalf("served %v, want %v", all, w)
	}
	if got := tb.Select(query, "lhc", 100, now+q-1, rng); len(got) != 0 {
		t.Fatalf("quarantined entries served again: %v", jobs(got))
	}
	back := tb.Select(query, "lhc", 100, now+q, rng)
	if !slices.Equal(jobs(back), jobs(first)) {
		t.Fatalf("after quarantine: %v, want %v", jobs(back), jobs(first))
	}
}

func TestSelectStrictOldestFirst(t *testing.T) {
	tb := NewTable(Config{LMin: 1, LFactor: 1e-12})
	rng := newRNG(3)
	var all []Entry
	for i, p := range rng.Perm(60) {
		e := entry("k", p, int64(rng.IntN(15))) // ties on Created
		if i%3 == 0 {
			e = entry("k", p, e.Created, "skip")
		}
		tb.Put(e, t0)
		if i%3 != 0 {
			all = append(all, e)
		}
	}
	slices.SortFunc(all, cmpEntry)
	query := MustParse("k AND NOT skip")
	var got []Entry
	for i := 0; len(got) < len(all); i++ {
		n := 1 + i%3
		s := tb.Select(query, "k", n, t0+int64(i), rng)
		want := all[len(got):min(len(got)+n, len(all))]
		if !slices.Equal(jobs(s), jobs(want)) {
			t.Fatalf("select %d (n=%d) = %v, want the oldest %v", i, n, jobs(s), jobs(want))
		}
		got = append(got, s...)
	}
	if s := tb.Select(query, "k", 1, t0+100, rng); len(s) != 0 {
		t.Fatalf("all quarantined, yet served %v", jobs(s))
	}
}

func TestSelectWithinOldestL(t *testing.T) {
	const l, n = 10, 3
	picked := map[int]int{} // rank among eligible at the time -> count
	for seed := range uint64(200) {
		tb := NewTable(Config{LMin: l, LFactor: 1e-12})
		rng := newRNG(seed)
		var live []Entry // eligible, oldest first
		for _, p := range rng.Perm(40) {
			e := entry("k", p, int64(p/2))
			tb.Put(e, t0)
			live = append(live, e)
		}
		slices.SortFunc(live, cmpEntry)
		for i := range 5 {
			if L := tb.L("k", t0); L != l {
				t.Fatalf("L = %d, want %d", L, l)
			}
			s := tb.Select(MustParse("k"), "k", n, t0+int64(i), rng)
			if len(s) != n || !slices.IsSortedFunc(s, cmpEntry) {
				t.Fatalf("Select = %v", jobs(s))
			}
			seen := map[string]bool{}
			for _, e := range s {
				if seen[string(e.Job)] {
					t.Fatalf("duplicate pick %s", e.Job)
				}
				seen[string(e.Job)] = true
				r := slices.IndexFunc(live, func(x Entry) bool { return bytes.Equal(x.Job, e.Job) })
				if r < 0 || r >= l {
					t.Fatalf("seed %d: picked %s at rank %d, outside the oldest %d", seed, e.Job, r, l)
				}
				picked[r]++
			}
			live = slices.DeleteFunc(live, func(x Entry) bool { return seen[string(x.Job)] })
		}
	}
	// Random, not oldest-first: every rank in the window gets picked, and
	// roughly evenly (n/l of the time each).
	for r := range l {
		if c := picked[r]; c < 200*5*n/l/2 {
			t.Errorf("rank %d picked %d times of %d: not uniform over the oldest %d", r, c, 200*5*n, l)
		}
	}
}

func TestSelectDeterministic(t *testing.T) {
	run := func(seed uint64) []string {
		tb := NewTable(Config{LMin: 30})
		for i := range 100 {
			tb.Put(entry("k", i, int64(i%7), fmt.Sprint("m", i%2)), t0)
		}
		rng := newRNG(seed)
		var out []string
		for i := range 20 {
			out = append(out, jobs(tb.Select(MustParse("k AND NOT m1"), "k", 2, t0+int64(i)*10, rng))...)
		}
		return out
	}
	a, b := run(7), run(7)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different picks:\n%v\n%v", a, b)
	}
	if c := run(8); slices.Equal(a, c) {
		t.Fatalf("seeds 7 and 8 picked the same: %v", a)
	}
}

// runRate serves one entry every period ms for dur ms and withdraws each
// delay ms after it was served; it returns the table and the end time.
func runRate(t *testing.T, cfg Config, period, delay, dur int64, check func(now int64, L int)) (*Table, int64) {
	tb := NewTable(cfg)
	for i := range int(dur/period) + 10 {
		tb.Put(entry("k", i, int64(i)), t0)
	}
	rng := newRNG(4)
	type due struct {
		at  int64
		job []byte
	}
	var queue []due
	now := t0
	for ; now < t0+dur; now += period {
		for len(queue) > 0 && queue[0].at <= now {
			if !tb.Withdraw("k", queue[0].job, "", queue[0].at) {
				t.Fatalf("Withdraw %s failed", queue[0].job)
			}
			queue = queue[1:]
		}
		s := tb.Select(MustParse("k"), "k", 1, now, rng)
		if len(s) != 1 {
			t.Fatalf("Select at +%d ms = %v", now-t0, jobs(s))
		}
		if delay > 0 {
			queue = append(queue, due{now + delay, s[0].Job})
		}
		if check != nil {
			check(now, tb.L("k", now))
		}
	}
	return tb, now
}

func TestLEstimate(t *testing.T) {
	cases := []struct {
		name          string
		cfg           Config
		period, delay int64 // ms
		wantRho       float64
		wantD         float64 // ms
	}{
		{"10/s, d 5 s", Config{}, 100, 5000, 10, 5000},
		{"2/s, d 1.5 s, LFactor 2", Config{LMin: 2, LFactor: 2}, 500, 1500, 2, 1500},
		{"20/s, never withdrawn: default d", Config{DefaultDelay: 3000}, 50, 0, 20, 3000},
		{"1/s, d 300 ms: LMin", Config{LMin: 5}, 1000, 300, 1, 300},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := NewTable(c.cfg).Config()
			tb, end := runRate(t, c.cfg, c.period, c.delay, 5*cfg.RateWindow, func(_ int64, L int) {
				if L < cfg.LMin {
					t.Fatalf("L = %d < LMin %d", L, cfg.LMin)
				}
			})
			want := math.Max(cfg.LFactor*c.wantRho*c.wantD/1000, float64(cfg.LMin))
			got := float64(tb.L("k", end))
			t.Logf("L = %v, LFactor·ρ·d = %.1f", got, cfg.LFactor*c.wantRho*c.wantD/1000)
			if math.Abs(got-want) > 0.05*want+1 {
				t.Errorf("L = %v, want ≈ %.1f", got, want)
			}
			// Queries stop: the rate decays and L falls back to LMin.
			if L := tb.L("k", end+20*cfg.RateWindow); L != cfg.LMin {
				t.Errorf("L after a quiet spell = %d, want LMin %d", L, cfg.LMin)
			}
		})
	}
	if L := NewTable(Config{LMin: 6}).L("none", t0); L != 6 {
		t.Errorf("L of an empty keyword = %d, want LMin", L)
	}
}

func TestPage(t *testing.T) {
	const expiry = 10_000
	tb := NewTable(Config{Expiry: expiry, Quarantine: 60_000, LMin: 1000})
	rng := newRNG(5)
	query := MustParse("lhc AND NOT bw:modem")
	now := t0 + expiry
	var want []Entry
	for range 80 {
		var extra []string
		if rng.IntN(4) == 0 {
			extra = append(extra, "bw:modem")
		}
		e := entry("lhc", rng.IntN(1000), int64(rng.IntN(20)), extra...)
		put := t0 + int64(rng.IntN(2))*expiry/2 // half expire at now
		if _, dup := tb.Get("lhc", e.Job); dup {
			continue
		}
		tb.Put(e, put)
		if extra == nil && put+expiry > now {
			want = append(want, e)
		}
	}
	tb.Put(entry("cms", 1, 0), now)
	slices.SortFunc(want, cmpEntry)
	if len(want) < 20 {
		t.Fatalf("only %d live matches; pick another seed", len(want))
	}
	tb.Select(query, "lhc", len(want)/2, now-1, rng) // quarantine half
	before := map[string]Entry{}
	for _, e := range want {
		before[string(e.Job)], _ = tb.Get("lhc", e.Job)
	}
	L := tb.L("lhc", now)

	for size := 1; size <= 7; size++ {
		var got []Entry
		var after *Cursor
		for pages := 0; ; pages++ {
			if pages > len(want) {
				t.Fatalf("size %d: paging does not end", size)
			}
			page, more := tb.Page(query, "lhc", after, size, now)
			if len(page) > size || (more && len(page) != size) {
				t.Fatalf("size %d: page of %d, more %v", size, len(page), more)
			}
			got = append(got, page...)
			if wantMore := len(got) < len(want); more != wantMore {
				t.Fatalf("size %d: more = %v after %d of %d", size, more, len(got), len(want))
			}
			if !more {
				break
			}
			last := page[len(page)-1]
			after = &Cursor{Created: last.Created, Job: last.Job}
		}
		if !slices.Equal(jobs(got), jobs(want)) {
			t.Fatalf("size %d: paged\n%v\nwant\n%v", size, jobs(got), jobs(want))
		}
	}
	for _, e := range want {
		g, _ := tb.Get("lhc", e.Job)
		if b := before[string(e.Job)]; g.Held != b.Held || g.Served != b.Served || g.Expires != b.Expires {
			t.Fatalf("Page touched %s: %+v -> %+v", e.Job, b, g)
		}
	}
	if tb.L("lhc", now) != L {
		t.Error("Page counted as a query")
	}
	// A cursor between entries; an empty cursor Job sorts first.
	mid := want[len(want)/2]
	page, _ := tb.Page(query, "lhc", &Cursor{Created: mid.Created}, 1000, now)
	i := slices.IndexFunc(want, func(e Entry) bool { return e.Created >= mid.Created })
	if !slices.Equal(jobs(page), jobs(want[i:])) {
		t.Fatalf("from Created %d: %v, want %v", mid.Created, jobs(page), jobs(want[i:]))
	}
	if p, more := tb.Page(query, "none", nil, 5, now); p != nil || more {
		t.Error("Page of a missing keyword")
	}
	if p, more := tb.Page(query, "lhc", nil, 0, now); p != nil || more {
		t.Error("Page with limit 0")
	}
}
