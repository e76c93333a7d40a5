package sim

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"
	"time"
)

// TestSummaryJSON: summary.json has snake_case keys (the maps' keys, kind
// names, aside), durations in seconds under _s keys, and reads back as
// the same Summary.
func TestSummaryJSON(t *testing.T) {
	in := Summary{Name: "static-50000j", Workload: Static, Nodes: 1024, CoolDown: 21 * time.Minute,
		Simulated: 56850 * time.Second, Wall: 51135583064, FirstMove: 90 * time.Second, HotSpotHalvedAfter: 1500 * time.Millisecond,
		EmptyQ: 7, RPC: map[string]uint64{"lookup": 3}, LookupRPC: map[string]uint64{"index write": 2},
		Top: []NodeLoad{{Node: 3, Up: 10, Avg: 1.5, ByKind: map[string]float64{"job": 1.5}}}, EvenWindowMaxOverMean: 1.2}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	maps := map[string]bool{"rpc": true, "lookup_rpc": true, "by_kind": true}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !snake.MatchString(k) {
					t.Errorf("key %s.%s is not snake_case", path, k)
				}
				if !maps[k] {
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
	for k, want := range map[string]float64{"cool_down_s": 1260, "simulated_s": 56850, "wall_s": 51.135583064,
		"first_move_s": 90, "hot_spot_halved_after_s": 1.5, "churn_life_s": 0} {
		if doc[k] != want {
			t.Errorf("%s = %v, want %v", k, doc[k], want)
		}
	}
	var out Summary
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("read back\n%+v\nwant\n%+v", out, in)
	}
}
