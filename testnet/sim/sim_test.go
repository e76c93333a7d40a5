package sim

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"
)

func TestEngineOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   []int64
		want []int32 // event ids (node field) in firing order
	}{
		{"sorted", []int64{1, 2, 3}, []int32{0, 1, 2}},
		{"reversed", []int64{30, 20, 10}, []int32{2, 1, 0}},
		{"ties fire in scheduling order", []int64{5, 5, 1, 5}, []int32{2, 0, 1, 3}},
		{"mixed", []int64{7, 3, 7, 0, 3}, []int32{3, 1, 4, 0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(1)
			for i, at := range tc.at {
				e.at(at, event{kind: evTick, node: int32(i)})
			}
			var got []int32
			last := int64(-1)
			for {
				ev, ok := e.next()
				if !ok {
					break
				}
				if e.Now() < last || e.Now() != ev.at {
					t.Fatalf("clock %d after %d for event at %d", e.Now(), last, ev.at)
				}
				last = e.Now()
				got = append(got, ev.node)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEngineScheduleDuringRun: events scheduled while running land in
// order, and never in the past.
func TestEngineScheduleDuringRun(t *testing.T) {
	e := NewEngine(2)
	e.at(10, event{node: 1})
	ev, _ := e.next()
	e.after(0, event{node: 2})
	e.at(3, event{node: 3}) // in the past: fires now
	e.after(5, event{node: 4})
	var got []int32
	for {
		ev, ok := e.next()
		if !ok {
			break
		}
		got = append(got, ev.node)
	}
	if ev.node != 1 || !slices.Equal(got, []int32{2, 3, 4}) || e.Now() != 15 {
		t.Fatalf("got %v at %d", got, e.Now())
	}
}

// short configs: the thesis scenarios scaled down to run in a second or two.
func shortStatic(nodes, jobs int) Config {
	return Config{Workload: Static, Nodes: nodes, Jobs: jobs, Rate: 15, Gap: 5 * time.Minute, RunIdle: 20 * time.Minute}
}

func run(t *testing.T, c Config) *Sim {
	t.Helper()
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return s
}

func csvOf(t *testing.T, s *Sim) []byte {
	var b bytes.Buffer
	if err := s.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDeterminism: the same seed gives the same CSV bytes; another seed
// another run.
func TestDeterminism(t *testing.T) {
	c := shortStatic(48, 200)
	c.ChurnLife = 6 * time.Hour
	c.Balance = true
	a, b := csvOf(t, run(t, c)), csvOf(t, run(t, c))
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with seed 1 wrote different CSVs")
	}
	c.Seed = 2
	if bytes.Equal(a, csvOf(t, run(t, c))) {
		t.Fatal("seeds 1 and 2 wrote the same CSV")
	}
}

// TestStaticShort: every job submitted, claimed once, finished and
// collected; none lost; no double claim.
func TestStaticShort(t *testing.T) {
	s := run(t, shortStatic(64, 500))
	m := s.m
	t.Logf("%+v", s.Summary(0))
	if m.submitted != 500 || m.collected != 500 || m.finished != 500 || m.claimed != 500 {
		t.Fatalf("submitted %d, claimed %d, finished %d, collected %d; want 500 each", m.submitted, m.claimed, m.finished, m.collected)
	}
	if m.lost != 0 || m.doubleClaims != 0 {
		t.Fatalf("%d lost, %d double claims", m.lost, m.doubleClaims)
	}
	if len(s.rows) == 0 || s.rows[len(s.rows)-1].Collected != 500 {
		t.Fatal("the CSV rows do not end with every job collected")
	}
}

// churnShort is the static short test with churn (mean lifetime = mean
// down time = 12 h, thesis 4.4.2), clients idle 12 h before their results.
func churnShort(seed uint64) Config {
	c := shortStatic(128, 1000)
	c.RunIdle = 12 * time.Hour
	c.ChurnLife = 12 * time.Hour
	c.Seed = seed
	return c
}

// checkChurn: every job submitted, finished and collected; none lost; no
// double claim; and churn did happen.
func checkChurn(t *testing.T, s *Sim) {
	t.Helper()
	live := s.rings[0].len()
	if s.m.lost != 0 || s.m.doubleClaims != 0 || s.m.finished != 1000 || s.m.collected != 1000 {
		t.Fatalf("seed %d: %d lost, %d double claims, %d finished and %d collected of 1000",
			s.c.Seed, s.m.lost, s.m.doubleClaims, s.m.finished, s.m.collected)
	}
	if live > 110 {
		t.Fatalf("seed %d: %d of 128 nodes live after 12 h of churn: churn did not happen", s.c.Seed, live)
	}
}

// TestChurnShort: the static test with churn: nothing lost, no double
// claim, every job collected. The clients' results go to the claim's
// nodes, which churn has often moved out of the job's r closest by then
// (or killed); the nodes that store a result pass it on at once to where
// a republish round would (pool's passOnResult), and a node no longer
// among a job's r closest hands its state to the closest until, and
// before, it drops its copy. Without them, finished states left with the
// nodes that held them, while every live replica kept the claim: up to
// 1.1 % of the jobs were still uncollected 12 h after the last result
// (seeds 1-6).
func TestChurnShort(t *testing.T) {
	s := run(t, churnShort(1))
	t.Logf("live nodes at the end %d of 128; %+v", s.rings[0].len(), s.Summary(0))
	checkChurn(t, s)
}

// TestChurnSeeds: the churn test at seeds 2 to 6.
func TestChurnSeeds(t *testing.T) {
	for seed := uint64(2); seed <= 6; seed++ {
		s := run(t, churnShort(seed))
		t.Logf("seed %d: %d live nodes at the end, %d collected, %d job RPCs", seed, s.rings[0].len(), s.m.collected, s.m.rpc[kJob])
		checkChurn(t, s)
	}
}

// TestBalanceImproves: the dynamic test with load balancing on spreads the
// keyword's index: the busiest node's lifetime RPC/s falls relative to the
// mean, and its index share falls.
func TestBalanceImproves(t *testing.T) {
	c := Config{Workload: Dynamic, Nodes: 48, Rate: 4, Duration: 2 * time.Hour,
		BalanceMin: 5 * time.Minute, BalanceMax: 10 * time.Minute, CoolDown: 6 * time.Minute}
	off := run(t, c).Summary(0)
	c.Balance = true
	on := run(t, c).Summary(0)
	t.Logf("off: busiest %.1f RPC/s (%.1f× mean), index max %.0f; on: busiest %.1f (%.1f×), index max %.0f, %d moves",
		off.BusiestAvg, off.BusiestOverMean, off.PeakIndexMax, on.BusiestAvg, on.BusiestOverMean, on.PeakIndexMax, on.Moves)
	if on.Moves == 0 || off.Moves != 0 {
		t.Fatalf("moves: %d with balancing, %d without", on.Moves, off.Moves)
	}
	if !(on.BusiestOverMean < off.BusiestOverMean) {
		t.Fatalf("busiest/mean %.2f with balancing, %.2f without: no improvement", on.BusiestOverMean, off.BusiestOverMean)
	}
	if on.Lost != 0 || on.Doubles != 0 {
		t.Fatalf("balancing: %d lost, %d double claims", on.Lost, on.Doubles)
	}
}

// TestPiggybackSpreadsSooner: balancing that also reacts to the loads
// piggy-backed on replies (as the nodes' controller does:
// loadbalance.Observed) finds the hot index node far more often than
// periodic probes of random keys alone (a probe finds it with chance
// 1/N), so the keyword's index spreads further: the
// busiest node's share falls and its peak index load is lower. The region
// is narrow (p = 16, one node of 128 inside) so that balancing alone
// spreads the keyword.
func TestPiggybackSpreadsSooner(t *testing.T) {
	c := Config{Workload: Dynamic, Nodes: 128, Rate: 8, Duration: 90 * time.Minute, Balance: true, RegionBits: 16,
		BalanceMin: 20 * time.Minute, BalanceMax: 60 * time.Minute, CoolDown: 6 * time.Minute, NoPiggyback: true}
	probes := run(t, c)
	c.NoPiggyback = false
	both := run(t, c)
	ps, bs := probes.Summary(0), both.Summary(0)
	t.Logf("probes only: busiest %.1f RPC/s (%.1f× mean), index max %.0f, %d moves; with piggy-backed loads: busiest %.1f (%.1f×), index max %.0f, %d moves, %d reactions",
		ps.BusiestAvg, ps.BusiestOverMean, ps.PeakIndexMax, ps.Moves, bs.BusiestAvg, bs.BusiestOverMean, bs.PeakIndexMax, bs.Moves, bs.Reactions)
	if ps.Reactions != 0 || bs.Reactions == 0 {
		t.Fatalf("reactions: %d with probes only, %d with piggy-backed loads", ps.Reactions, bs.Reactions)
	}
	if !(bs.BusiestOverMean < ps.BusiestOverMean/2) {
		t.Fatalf("busiest/mean %.1f with piggy-backed loads, %.1f with probes only: not halved", bs.BusiestOverMean, ps.BusiestOverMean)
	}
	if bs.Lost != 0 || bs.Doubles != 0 {
		t.Fatalf("%d lost, %d double claims", bs.Lost, bs.Doubles)
	}
}

// TestLookupCost: an uncached lookup charges exactly the model's RPC
// count, k of them on the key's k closest nodes; a repeat within the
// cache's 90 s is free; after it, charged again.
func TestLookupCost(t *testing.T) {
	lm := lookupModel{alpha: 3, k: 20}
	for _, tc := range []struct{ n, want int }{{2, 1}, {16, 15}, {20, 19}, {21, 20}, {41, 26}, {1024, 38}, {10_000, 47}} {
		if got := lm.rpcs(tc.n); got != tc.want {
			t.Errorf("rpcs(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
	for _, n := range []int{16, 100, 1024} {
		s, err := New(Config{Nodes: n})
		if err != nil {
			t.Fatal(err)
		}
		cache := map[uint64]int64{}
		key := randPos(s.e.rng)
		from := key.FlipBit(0) // shares no bit with the key: the full cost
		total := func() (all, closest uint32) {
			near := s.rings[0].closest(key, s.c.K, nil)
			for i := range s.nodes {
				c := s.nodes[i].cnt[kLookup]
				all += c
				if slices.Contains(near, int32(i)) {
					closest += c
				}
			}
			return
		}
		s.lookup(lkSubmit, cache, from, 0, key)
		all, closest := total()
		if int(all) != lm.rpcs(n) || int(closest) < min(s.c.K, n-1) {
			t.Fatalf("%d nodes: lookup charged %d RPCs (%d on the k closest), want %d", n, all, closest, lm.rpcs(n))
		}
		s.e.now += 89_000
		s.lookup(lkSubmit, cache, from, 0, key)
		if a, _ := total(); a != all {
			t.Fatalf("%d nodes: cached lookup charged %d RPCs", n, a-all)
		}
		s.e.now += 2_000
		s.lookup(lkSubmit, cache, from, 0, key)
		if a, _ := total(); int(a) != 2*lm.rpcs(n) {
			t.Fatalf("%d nodes: lookup after the cache expired charged %d RPCs, want %d", n, int(a)-int(all), lm.rpcs(n))
		}
	}
}

func TestPresetsValid(t *testing.T) {
	for _, name := range PresetNames() {
		c, err := Preset(name, 1024)
		if err != nil {
			t.Fatal(err)
		}
		c.ApplyDefaults()
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Preset("nope", 10); err == nil {
		t.Fatal("unknown preset accepted")
	}
}

// TestPartitionHeals: a third of the nodes cut off for 20 minutes while
// jobs are claimed: after the partition heals, every job is still
// collected and none is lost (double claims across the cut are possible,
// thesis 3.7, and counted).
func TestPartitionHeals(t *testing.T) {
	c := shortStatic(64, 600)
	c.Gap = time.Minute
	c.Partition = Partition{At: 90 * time.Second, Length: 20 * time.Minute, Fraction: 0.33}
	s := run(t, c)
	t.Logf("collected %d, lost %d, double claims %d, failed attempts %d", s.m.collected, s.m.lost, s.m.doubleClaims, s.m.failedAttempts)
	if s.part {
		t.Fatal("the partition did not heal")
	}
	if s.m.lost != 0 || s.m.collected != 600 {
		t.Fatalf("%d lost, %d of 600 collected", s.m.lost, s.m.collected)
	}
}
