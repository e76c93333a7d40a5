package feasible

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// cycle is an estimator that saw days of on h hours then off 24-h.
func cycle(cfg Config, days int, onH int) (*Estimator, time.Time) {
	e := New(cfg, State{})
	now := t0
	for range days {
		e.On(now)
		e.Off(now.Add(time.Duration(onH) * time.Hour))
		now = now.Add(24 * time.Hour)
	}
	e.On(now)
	return e, now
}

func TestAvailability(t *testing.T) {
	e, now := cycle(Config{}, 3, 6)
	av := e.Availability(now)
	// 18 h on over 3 days (the current period is empty): 0.25.
	if av.Fraction < 0.249 || av.Fraction > 0.251 || av.MaxOff != 18*time.Hour || av.MinOn != 6*time.Hour {
		t.Fatalf("availability %+v, want fraction 0.25, off 18h, on 6h", av)
	}
	if got := New(Config{}, State{}).Availability(now); got.Fraction != 1 || got.MaxOff != 0 {
		t.Fatalf("nothing seen: %+v, want fraction 1", got)
	}
}

func TestFeasible(t *testing.T) {
	e, now := cycle(Config{}, 3, 6)
	e.Finished("short", 0, 10*time.Minute)
	e.Finished("short", 0, 20*time.Minute)
	e.Finished("long", 0, 5*time.Hour)
	mean, _ := cycle(Config{MeanOnly: true}, 3, 6)
	mean.Finished("short", 0, 20*time.Minute)
	for _, tc := range []struct {
		name    string
		e       *Estimator
		app     string
		tFinish time.Duration
		ok      bool
		why     string
	}{
		// 20 min + 1 × 18 h off, ×1.2 = 21.9 h.
		{"short, a day", e, "short", 24 * time.Hour, true, ""},
		{"short, an hour: the client may go off for 18 h", e, "short", time.Hour, false, "off periods"},
		// 5 h + 1 × 18 h, ×1.2 = 27.6 h.
		{"long, a day", e, "long", 24 * time.Hour, false, "off periods"},
		{"unknown: first guess, a day", e, "new", 24 * time.Hour, true, ""},
		// 25 min (T_finish / 2.4) + 18 h would refuse it: a new
		// application is claimed all the same, to learn its run time.
		{"unknown: first guess, an hour", e, "new", time.Hour, true, ""},
		// Nothing known of the client either: 1 s / 2.4, ×1.2 = 0.5 s.
		{"unknown, nothing known: a second", New(Config{}, State{}), "new", time.Second, true, ""},
		// Negative control: BOINC's mean alone claims what the off bound refuses.
		{"mean only: short, an hour", mean, "short", time.Hour, false, "mean"},
		{"mean only: short, 2 h", mean, "short", 2 * time.Hour, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, est, why := tc.e.Feasible(tc.app, 0, tc.tFinish, now)
			if ok != tc.ok || !strings.Contains(why, tc.why) {
				t.Fatalf("Feasible = %v, %v, %q; want %v, reason with %q", ok, est, why, tc.ok, tc.why)
			}
		})
	}
}

func TestRunTimePerOp(t *testing.T) {
	e := New(Config{}, State{})
	e.Finished("a", 100, 100*time.Second)
	e.Finished("a", 0, 50*time.Second)
	if run, known := e.RunTime("a", 300); !known || run != 300*time.Second {
		t.Fatalf("per op: %v %v, want 300s", run, known)
	}
	if run, _ := e.RunTime("a", 0); run != 100*time.Second {
		t.Fatalf("per job: %v, want the longest, 100s", run)
	}
	for range MaxRuns {
		e.Finished("a", 0, time.Second)
	}
	if run, _ := e.RunTime("a", 0); run != time.Second {
		t.Fatalf("after %d short runs: %v, want 1s (older runs forgotten)", MaxRuns, run)
	}
}

func TestShouldRelease(t *testing.T) {
	e, now := cycle(Config{}, 3, 6) // fraction 0.25
	e.Finished("a", 0, time.Hour)
	for _, tc := range []struct {
		name         string
		ran, elapsed time.Duration
		release      bool
	}{
		{"just claimed", 0, 0, false},                       // 4 h expected of 12
		{"slept 9 h before it ran", 0, 9 * time.Hour, true}, // 9 + 4 > 12
		{"slept 9 h, nearly done", 50 * time.Minute, 9 * time.Hour, false},
		{"past its estimate, near T_finish", 2 * time.Hour, 11*time.Hour + 50*time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := e.ShouldRelease("a", 0, tc.ran, tc.elapsed, 12*time.Hour, now); got != tc.release {
				t.Fatalf("ShouldRelease = %v (%s), want %v", got, why, tc.release)
			}
		})
	}
}

func TestStateJSON(t *testing.T) {
	e, now := cycle(Config{}, 2, 6)
	e.Finished("a", 0, time.Hour)
	e.Seen(now.Add(2 * time.Hour))
	b, err := json.Marshal(e.State())
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	// Loaded after a crash: the open period ends where it was last seen.
	l := New(Config{}, st)
	if got := l.State(); !got.OnSince.IsZero() || len(got.Periods) != 3 || got.Periods[2].End != now.Add(2*time.Hour) {
		t.Fatalf("loaded periods %+v, on since %v; want 3 closed, the last at +2h", got.Periods, got.OnSince)
	}
	if run, known := l.RunTime("a", 0); !known || run != time.Hour {
		t.Fatalf("loaded run time %v %v", run, known)
	}
}

func TestWindowTrims(t *testing.T) {
	e, now := cycle(Config{Window: 48 * time.Hour}, 10, 6)
	e.Off(now.Add(time.Hour))
	if n := len(e.State().Periods); n > 3 {
		t.Fatalf("%d periods kept in a 2-day window, want ≤ 3", n)
	}
}
