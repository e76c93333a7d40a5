package loadbalance

import (
	"math"
	"strings"
	"testing"
)

func TestApplyDefaults(t *testing.T) {
	var p Params
	p.ApplyDefaults()
	want := Params{Phi: 0.4, Trivial: 100, WIndex: 1, WJob: 3, WRate: 10,
		CoolDown: 21 * 60 * 1000, MinMoveInterval: 21 * 60 * 1000}
	if p != want {
		t.Fatalf("defaults = %+v, want %+v", p, want)
	}
	q := Params{Phi: 0.5, Trivial: -1, WIndex: 2, WJob: 5, WRate: 1, CoolDown: 1000}
	q.ApplyDefaults()
	want = Params{Phi: 0.5, Trivial: -1, WIndex: 2, WJob: 5, WRate: 1, CoolDown: 1000, MinMoveInterval: 1000}
	if q != want {
		t.Fatalf("set fields changed or MinMoveInterval not = CoolDown: %+v, want %+v", q, want)
	}
}

func TestValue(t *testing.T) {
	custom := Params{WIndex: 2, WJob: 1, WRate: 0.5}
	for _, tc := range []struct {
		name string
		l    Load
		p    Params
		want float64
	}{
		{"empty", Load{}, Params{}, 0},
		{"index only", Load{IndexEntries: 250}, Params{}, 250},
		{"jobs weigh 3", Load{ClosestJobs: 10}, Params{}, 30},
		{"rate weighs 10", Load{Rate: 2.5}, Params{}, 25},
		{"all", Load{IndexEntries: 10, ClosestJobs: 5, Rate: 2}, Params{}, 45},
		{"capacity 2 halves", Load{IndexEntries: 10, ClosestJobs: 5, Rate: 2, Capacity: 2}, Params{}, 22.5},
		{"capacity 0.5 doubles", Load{IndexEntries: 100, Capacity: 0.5}, Params{}, 200},
		{"capacity 0 is 1", Load{IndexEntries: 100, Capacity: 0}, Params{}, 100},
		{"negative capacity is 1", Load{IndexEntries: 100, Capacity: -3}, Params{}, 100},
		{"NaN capacity is 1", Load{IndexEntries: 100, Capacity: math.NaN()}, Params{}, 100},
		{"custom weights", Load{IndexEntries: 10, ClosestJobs: 5, Rate: 4}, custom, 27},
	} {
		if got := tc.l.Value(tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: Value = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestVerdictString(t *testing.T) {
	for v, want := range map[Verdict]string{None: "none", SelfMoves: "self-moves", OtherMoves: "other-moves", 7: "Verdict(7)"} {
		if got := v.String(); got != want {
			t.Errorf("Verdict(%d).String() = %q, want %q", int(v), got, want)
		}
	}
}

func TestDecide(t *testing.T) {
	const now = int64(1_700_000_000_000)
	const minute = int64(60 * 1000)
	idx := func(n int) Load { return Load{IndexEntries: n} }
	with := func(l Load, f func(*Load)) Load { f(&l); return l }
	long := Params{MinMoveInterval: 120 * minute} // cool-down stays 21 min
	for _, tc := range []struct {
		name        string
		self, other Load
		p           Params
		want        Verdict
		reason      string // substring of Reason
	}{
		{"balanced", idx(500), idx(600), Params{}, None, "balanced"},
		{"equal", idx(1000), idx(1000), Params{}, None, "balanced"},
		{"zero loads", idx(0), idx(0), Params{}, None, "zero"},
		{"self much lighter", idx(10), idx(1000), Params{}, SelfMoves, "self moves"},
		{"self empty", idx(0), idx(20000), Params{}, SelfMoves, "self moves"},
		{"other much lighter", idx(1000), idx(10), Params{}, OtherMoves, "other moves"},
		{"phi boundary is strict", idx(400), idx(1000), Params{}, None, "balanced"},
		{"just below phi", idx(399), idx(1000), Params{}, SelfMoves, ""},
		{"under trivial", idx(1), idx(3), Params{}, None, "trivial"},
		{"trivial boundary is strict", idx(0), idx(100), Params{}, None, "trivial"},
		{"just above trivial", idx(0), idx(101), Params{}, SelfMoves, ""},
		{"trivial disabled", idx(1), idx(3), Params{Trivial: -1}, SelfMoves, ""},
		{"jobs weigh 3", Load{ClosestJobs: 100}, idx(700), Params{}, None, "balanced"},
		{"jobs heavy", idx(150), Load{ClosestJobs: 100}, Params{}, None, "balanced"},
		{"jobs make heavy", idx(50), Load{ClosestJobs: 300}, Params{}, SelfMoves, ""},
		{"rate makes heavy", idx(400), Load{IndexEntries: 100, Rate: 100}, Params{}, SelfMoves, ""},
		{"capacity evens out", Load{IndexEntries: 2000, Capacity: 4}, idx(600), Params{}, None, "balanced"},
		{"capacity makes light", Load{IndexEntries: 1000, Capacity: 10}, idx(1000), Params{}, SelfMoves, ""},
		{"self moved within cool-down", with(idx(10), func(l *Load) { l.LastMove = now - 5*minute }), idx(1000), Params{}, None, "cool-down: self"},
		{"self changed within cool-down", with(idx(10), func(l *Load) { l.LastChange = now - 20*minute }), idx(1000), Params{}, None, "cool-down: self"},
		{"other moved within cool-down", idx(10), with(idx(1000), func(l *Load) { l.LastMove = now - minute }), Params{}, None, "cool-down: other"},
		{"other changed within cool-down", idx(10), with(idx(1000), func(l *Load) { l.LastChange = now - minute }), Params{}, None, "cool-down: other"},
		{"heavy self in cool-down", with(idx(1000), func(l *Load) { l.LastChange = now - minute }), idx(10), Params{}, None, "cool-down: self"},
		{"cool-down over exactly", with(idx(10), func(l *Load) { l.LastMove, l.LastChange = now-21*minute, now-21*minute }), idx(1000), Params{}, SelfMoves, ""},
		{"cool-down 1 ms short", with(idx(10), func(l *Load) { l.LastChange = now - 21*minute + 1 }), idx(1000), Params{}, None, "cool-down"},
		{"future timestamp counts as recent", with(idx(10), func(l *Load) { l.LastChange = now + minute }), idx(1000), Params{}, None, "cool-down"},
		{"cool-down disabled", with(idx(10), func(l *Load) { l.LastChange = now - 1 }), idx(1000), Params{NoCoolDown: true, NoMoveInterval: true}, SelfMoves, ""},
		{"self moved within MinMoveInterval", with(idx(10), func(l *Load) { l.LastMove = now - 60*minute }), idx(1000), long, None, "move interval: self"},
		{"other moved within MinMoveInterval", idx(1000), with(idx(10), func(l *Load) { l.LastMove = now - 60*minute }), long, None, "move interval: other"},
		{"heavy's own move does not block", idx(10), with(idx(1000), func(l *Load) { l.LastMove = now - 60*minute }), long, SelfMoves, ""},
		{"MinMoveInterval over", with(idx(10), func(l *Load) { l.LastMove = now - 120*minute }), idx(1000), long, SelfMoves, ""},
		{"negative count is invalid", idx(-5), idx(1000), Params{}, None, "invalid"},
		{"NaN rate is invalid", Load{Rate: math.NaN()}, idx(1000), Params{}, None, "invalid"},
		{"infinite rate is invalid", idx(10), Load{Rate: math.Inf(1)}, Params{}, None, "invalid"},
	} {
		got := Decide(tc.self, tc.other, now, tc.p)
		if got.Verdict != tc.want || !strings.Contains(got.Reason, tc.reason) {
			t.Errorf("%s: Decide = %v %q, want %v with reason containing %q", tc.name, got.Verdict, got.Reason, tc.want, tc.reason)
		}
		if got.Reason == "" {
			t.Errorf("%s: empty reason", tc.name)
		}
		ws, wo := tc.self.Value(tc.p), tc.other.Value(tc.p)
		if !(got.Self == ws || math.IsNaN(ws)) || !(got.Other == wo || math.IsNaN(wo)) {
			t.Errorf("%s: Decision loads %v/%v, want %v/%v", tc.name, got.Self, got.Other, ws, wo)
		}
	}
}

// TestDecideSymmetric checks that swapping the roles swaps the verdict.
func TestDecideSymmetric(t *testing.T) {
	loads := []int{0, 1, 50, 99, 100, 101, 150, 250, 399, 400, 401, 1000, 5000}
	for _, a := range loads {
		for _, b := range loads {
			x := Decide(Load{IndexEntries: a}, Load{IndexEntries: b}, 1, Params{})
			y := Decide(Load{IndexEntries: b}, Load{IndexEntries: a}, 1, Params{})
			swapped := map[Verdict]Verdict{None: None, SelfMoves: OtherMoves, OtherMoves: SelfMoves}[y.Verdict]
			if x.Verdict != swapped {
				t.Errorf("Decide(%d,%d) = %v but Decide(%d,%d) = %v", a, b, x.Verdict, b, a, y.Verdict)
			}
			lo, hi := float64(min(a, b)), float64(max(a, b))
			if want := lo < 0.4*hi && hi-lo > 100; (x.Verdict != None) != want {
				t.Errorf("Decide(%d,%d) = %v, want move=%v", a, b, x.Verdict, want)
			}
		}
	}
}
