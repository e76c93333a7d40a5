package sched

import (
	"testing"
	"time"
)

func TestWorkRequest(t *testing.T) {
	const h, day = time.Hour, 24 * time.Hour
	s := mustNew(t, []Project{{"A", 75}, {"B", 25}}, 4)
	if a, b := s.MinResults("A"), s.MinResults("B"); a != 3 || b != 1 {
		t.Fatalf("MinResults = %d, %d; want 3, 1", a, b)
	}
	// avg_proc_rate: A 3 CPU-s per s, B 1 (× activeFrac).
	fullA := []time.Duration{30 * h, 30 * h, 30 * h, h, h} // last 2 skipped: 90h/3 = 30h to starvation
	for _, tc := range []struct {
		name    string
		queued  map[string][]time.Duration
		active  float64
		urgency Urgency
		req     map[string]time.Duration
	}{
		{"nothing queued", nil, 1, NeedWorkImmediately, map[string]time.Duration{"A": 6 * day, "B": 2 * day}},
		{"half active", nil, 0.5, NeedWorkImmediately, map[string]time.Duration{"A": 3 * day, "B": day}},
		{"enough for T", map[string][]time.Duration{"A": fullA, "B": {10 * h, 10 * h, 10 * h}}, 1, DontNeedWork,
			map[string]time.Duration{"A": 0, "B": 0}},
		{"B starves within T", map[string][]time.Duration{"A": fullA, "B": {12 * h}}, 1, NeedWork,
			map[string]time.Duration{"A": (48 - 30) * 3 * h, "B": 36 * h}},
		{"beyond 2T asks nothing", map[string][]time.Duration{"A": {100 * day, 100 * day, 0, 0}}, 1, NeedWorkImmediately,
			map[string]time.Duration{"A": 0, "B": 2 * day}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, req, err := s.WorkRequest(tc.queued, day, tc.active)
			if err != nil {
				t.Fatal(err)
			}
			if u != tc.urgency {
				t.Errorf("urgency %v, want %v", u, tc.urgency)
			}
			for n, want := range tc.req {
				if got := req[n]; absDur(got-want) > time.Microsecond {
					t.Errorf("request[%s] = %v, want %v", n, got, want)
				}
			}
		})
	}
	for _, bad := range []struct {
		q      map[string][]time.Duration
		period time.Duration
		active float64
	}{
		{nil, 0, 1}, {nil, day, 0}, {nil, day, 1.5}, {nil, day, nan()},
		{map[string][]time.Duration{"X": nil}, day, 1}, {map[string][]time.Duration{"A": {-h}}, day, 1},
	} {
		if _, _, err := s.WorkRequest(bad.q, bad.period, bad.active); err == nil {
			t.Errorf("WorkRequest(%v, %v, %v) succeeded", bad.q, bad.period, bad.active)
		}
	}
	if NeedWork.String() != "NEED_WORK" || Urgency(7).String() != "Urgency(7)" {
		t.Error("Urgency.String")
	}
}
