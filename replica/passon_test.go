package replica

import (
	"slices"
	"testing"
)

// TestPassOnTargets: the closest hands on to the other r−1, another of
// the r to the closest, a node outside the r to all r.
func TestPassOnTargets(t *testing.T) {
	view := []string{"a", "b", "c"}
	for _, c := range []struct {
		self string
		want []string
	}{{"a", []string{"b", "c"}}, {"b", []string{"a"}}, {"c", []string{"a"}}, {"z", []string{"a", "b", "c"}}} {
		if got := PassOnTargets(c.self, view); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.self, got, c.want)
		}
	}
	if got := PassOnTargets("a", []string(nil)); len(got) != 0 {
		t.Errorf("empty view: %v", got)
	}
}
