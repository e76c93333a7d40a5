package project

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

// TestStatsJSON: the ledger's stats marshal with snake_case keys (the
// jobs' states and units' statuses, map keys, aside) and durations in
// seconds under keys ending in _s.
func TestStatsJSON(t *testing.T) {
	st := Stats{
		Jobs: map[string]int{"submitted": 3}, Units: map[string]int{"valid": 2}, Results: 4, LastHour: 1,
		HarvestP50: 1200 * time.Millisecond, HarvestP99: 3400 * time.Millisecond, HarvestTimed: 7,
		Credit:    []Credit{{Client: "alice", Valid: 2, Invalid: 1, CPU: 1500 * time.Millisecond}},
		OldestAge: 90 * time.Second,
		Stuck:     []Stuck{{App: "foo", Keywords: []string{"lhc"}, Jobs: 1, Oldest: time.Hour, TFinish: 10 * time.Minute}},
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !snake.MatchString(k) {
					t.Errorf("key %s.%s is not snake_case", path, k)
				}
				if k != "jobs" && k != "units" {
					walk(e, path+"."+k)
				}
			}
		case []any:
			for _, e := range x {
				walk(e, path+"[]")
			}
		}
	}
	walk(doc, "")
	if doc["oldest_age_s"] != 90.0 {
		t.Errorf("oldest_age_s = %v, want 90 (%s)", doc["oldest_age_s"], b)
	}
	if doc["harvest_p50_s"] != 1.2 || doc["harvest_p99_s"] != 3.4 || doc["harvest_timed"] != 7.0 {
		t.Errorf("harvest_p50_s = %v, harvest_p99_s = %v, harvest_timed = %v; want 1.2, 3.4, 7 (%s)",
			doc["harvest_p50_s"], doc["harvest_p99_s"], doc["harvest_timed"], b)
	}
	credit, _ := doc["credit"].([]any)
	if len(credit) != 1 || credit[0].(map[string]any)["cpu_s"] != 1.5 {
		t.Errorf("credit = %v, want one entry with cpu_s 1.5 (%s)", doc["credit"], b)
	}
	stuck, _ := doc["stuck"].([]any)
	if len(stuck) != 1 || stuck[0].(map[string]any)["oldest_s"] != 3600.0 || stuck[0].(map[string]any)["t_finish_s"] != 600.0 {
		t.Errorf("stuck = %v, want one group with oldest_s 3600 and t_finish_s 600 (%s)", doc["stuck"], b)
	}
}
