package sched

import (
	"math/rand/v2"
	"testing"
	"time"
)

func mustNew(t *testing.T, ps []Project, slots int) *Scheduler {
	t.Helper()
	s, err := New(ps, slots)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func only(names ...string) func(string) bool {
	return func(n string) bool {
		for _, m := range names {
			if m == n {
				return true
			}
		}
		return false
	}
}

func TestNewErrors(t *testing.T) {
	ok := []Project{{"a", 1}}
	for _, tc := range []struct {
		name  string
		ps    []Project
		slots int
	}{
		{"no projects", nil, 1},
		{"empty slice", []Project{}, 1},
		{"duplicate", []Project{{"a", 1}, {"b", 1}, {"a", 2}}, 1},
		{"zero share", []Project{{"a", 1}, {"b", 0}}, 1},
		{"negative share", []Project{{"a", -1}}, 1},
		{"NaN share", []Project{{"a", nan()}}, 1},
		{"infinite share", []Project{{"a", inf()}}, 1},
		{"empty name", []Project{{"", 1}}, 1},
		{"zero slots", ok, 0},
		{"negative slots", ok, -3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := New(tc.ps, tc.slots); err == nil {
				t.Fatalf("New(%v, %d) = %v, nil; want error", tc.ps, tc.slots, s)
			}
		})
	}
	if _, err := New([]Project{{"a", 0.001}, {"b", 1e6}}, 64); err != nil {
		t.Fatalf("valid New: %v", err)
	}
}

func nan() float64 { z := 0.0; return z / z }
func inf() float64 { z := 0.0; return 1 / z }

type charge struct {
	name string
	cpu  time.Duration
}

func TestNext(t *testing.T) {
	m := time.Minute
	abc := []Project{{"a", 1}, {"b", 1}, {"c", 1}}
	for _, tc := range []struct {
		name     string
		ps       []Project
		charges  []charge
		runnable func(string) bool
		want     string
		wantOK   bool
		debts    map[string]time.Duration // after Next
	}{
		{"all zero: name order", abc, nil, nil, "a", true, map[string]time.Duration{"a": 0, "b": 0, "c": 0}},
		{"name order, not input order", []Project{{"z", 1}, {"b", 1}, {"m", 1}}, nil, nil, "b", true, nil},
		{"tie between b and c", abc, []charge{{"a", 30 * m}}, nil, "b", true,
			map[string]time.Duration{"a": -20 * m, "b": 10 * m, "c": 10 * m}},
		{"highest debt", abc, []charge{{"a", 30 * m}, {"b", 6 * m}}, nil, "c", true,
			map[string]time.Duration{"a": -18 * m, "b": 6 * m, "c": 12 * m}},
		{"shares weight the debt", []Project{{"a", 3}, {"b", 1}}, []charge{{"a", 25 * m}, {"b", 15 * m}}, nil, "a", true,
			map[string]time.Duration{"a": 5 * m, "b": -5 * m}}, // the seed's example: A owed 30, got 25
		{"non-runnable highest is skipped and reset", abc, []charge{{"a", 30 * m}, {"b", 6 * m}}, only("a", "b"), "b", true,
			map[string]time.Duration{"a": -12 * m, "b": 12 * m, "c": 0}},
		{"only non-runnable has debt", abc, []charge{{"a", 30 * m}}, only("a"), "a", true,
			map[string]time.Duration{"a": 0, "b": 0, "c": 0}},
		{"nothing runnable", abc, []charge{{"a", 30 * m}}, only(), "", false,
			map[string]time.Duration{"a": 0, "b": 0, "c": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, tc.ps, 1)
			for _, c := range tc.charges {
				if err := s.Charge(c.name, c.cpu); err != nil {
					t.Fatal(err)
				}
			}
			got, ok := s.Next(tc.runnable)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("Next = %q, %v; want %q, %v (debts %v)", got, ok, tc.want, tc.wantOK, s.Debts())
			}
			for n, want := range tc.debts {
				if d := s.Debts()[n]; absDur(d-want) > 1 {
					t.Errorf("debt[%s] = %v, want %v", n, d, want)
				}
			}
		})
	}
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

// TestIdleProjectHasNoDebt: a project without work is reset to zero debt and
// left out of the shares (seed, sketch step 1), however long it is idle.
func TestIdleProjectHasNoDebt(t *testing.T) {
	s := mustNew(t, []Project{{"a", 1}, {"b", 1}}, 1)
	for i := range 1000 {
		n, ok := s.Next(only("a"))
		if !ok || n != "a" {
			t.Fatalf("step %d: Next = %q, %v; want a", i, n, ok)
		}
		if err := s.Charge(n, time.Hour); err != nil {
			t.Fatal(err)
		}
		if d := s.Debts(); d["a"] != 0 || d["b"] != 0 {
			t.Fatalf("step %d: debts %v; want all zero while b is idle", i, d)
		}
	}
	if n, _ := s.Next(nil); n != "a" { // b returns with no back-pay: a tie
		t.Fatalf("after b returns Next = %q; want a (tie)", n)
	}
}

// TestAnticipatedDebt: picks within one round lower the anticipated debt,
// so slots freed together are spread; a Charge starts a new round.
func TestAnticipatedDebt(t *testing.T) {
	s := mustNew(t, []Project{{"a", 3}, {"b", 1}}, 4)
	var got []string
	for range 4 {
		n, _ := s.Next(nil)
		got = append(got, n)
	}
	if want := "abab"; join(got) != want {
		t.Fatalf("first round picks %s, want %s", join(got), want)
	}
	if err := s.Charge("b", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // a is owed 7.5m, b -7.5m; the expected pay-off is 10m
		want := []string{"a", "a", "b"}[i]
		if n, _ := s.Next(nil); n != want {
			t.Fatalf("second round pick %d = %q, want %q", i, n, want)
		}
	}
}

func join(ss []string) (s string) {
	for _, x := range ss {
		s += x
	}
	return s
}

func TestClamp(t *testing.T) {
	s := mustNew(t, []Project{{"a", 1}, {"b", 1}, {"c", 1}}, 2)
	if err := s.SetMaxDebt(time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Charge("a", 100*time.Hour); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"a": -time.Hour, "b": 30 * time.Minute, "c": 30 * time.Minute}
	for n, w := range want {
		if d := s.Debts()[n]; absDur(d-w) > 1 {
			t.Errorf("debt[%s] = %v, want %v", n, d, w)
		}
	}
	if err := s.SetMaxDebt(0); err == nil {
		t.Error("SetMaxDebt(0) succeeded")
	}
}

// TestDebtsSumToZero: after every Charge (and Next) the debts sum to zero
// within rounding and stay within ±MaxDebt; idle projects are at zero.
func TestDebtsSumToZero(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxDebt  time.Duration
		someIdle bool
	}{{"unclamped", DefaultMaxDebt, false}, {"clamped", 40 * time.Minute, false}, {"with idle projects", 40 * time.Minute, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 11))
			ps := []Project{{"a", 50}, {"b", 30}, {"c", 20}, {"d", 0.5}}
			s := mustNew(t, ps, 3)
			if err := s.SetMaxDebt(tc.maxDebt); err != nil {
				t.Fatal(err)
			}
			idle := map[string]bool{}
			for i := range 5000 {
				if tc.someIdle && i%7 == 0 {
					for _, p := range ps {
						idle[p.Name] = rng.IntN(3) == 0
					}
					s.Next(func(n string) bool { return !idle[n] })
				}
				name := ps[rng.IntN(len(ps))].Name
				idle[name] = false
				if err := s.Charge(name, time.Duration(rng.Int64N(int64(3*time.Hour)))); err != nil {
					t.Fatal(err)
				}
				sum := time.Duration(0)
				for n, d := range s.Debts() {
					sum += d
					if absDur(d) > s.MaxDebt() {
						t.Fatalf("step %d: |debt[%s]| = %v > %v", i, n, d, s.MaxDebt())
					}
					if idle[n] && d != 0 {
						t.Fatalf("step %d: idle %s has debt %v", i, n, d)
					}
				}
				if absDur(sum) > time.Duration(len(ps)) {
					t.Fatalf("step %d: debts %v sum to %v", i, s.Debts(), sum)
				}
			}
		})
	}
}

func TestChangeProjects(t *testing.T) {
	s := mustNew(t, []Project{{"a", 1}, {"b", 1}}, 1)
	if err := s.Charge("a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Project{"c", 2}); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		s.Add(Project{"a", 1}), s.Add(Project{"x", 0}), s.Charge("nope", time.Second),
		s.Charge("a", -time.Second), s.SetShare("nope", 1), s.SetShare("a", -1), s.Remove("nope"),
	} {
		if err == nil {
			t.Error("invalid change succeeded")
		}
	}
	if err := s.Remove("b"); err != nil { // b was owed 30m; a (-30m) and c (0) renormalise
		t.Fatal(err)
	}
	if d := s.Debts(); len(d) != 2 || d["a"] != -15*time.Minute || d["c"] != 15*time.Minute {
		t.Fatalf("after Remove debts = %v", d)
	}
	if err := s.SetShare("a", 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Charge("c", 50*time.Minute); err != nil { // a +30m, c +20m-50m
		t.Fatal(err)
	}
	if d := s.Debts(); d["a"] != 15*time.Minute || d["c"] != -15*time.Minute {
		t.Fatalf("after SetShare debts = %v", d)
	}
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("c"); err == nil {
		t.Error("removed the last project")
	}
	if ps := s.Projects(); len(ps) != 1 || ps[0] != (Project{"c", 2}) {
		t.Errorf("Projects = %v", ps)
	}
}
