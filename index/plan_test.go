package index

import (
	"slices"
	"testing"

	"github.com/up-pool/up/job"
)

// TestDesiredAndRuledOut: only a job's closest node lists it, a ready job
// under its keywords, a finished one under its project's finished keyword;
// RuledOut says which withdrawals the job's state calls for whoever lists
// it (a node that merely stopped being the closest withdraws for itself).
func TestDesiredAndRuledOut(t *testing.T) {
	listing := []string{"lhc", "sixtrack"}
	tests := []struct {
		phase   job.Phase
		closest bool
		want    []string
		ruled   map[string]bool // keyword → RuledOut
	}{
		{job.Ready, true, listing, map[string]bool{"lhc": false, "sixtrack": false, "lhc:finished": true}},
		{job.Ready, false, nil, map[string]bool{"lhc": false}},
		{job.TempClaimed, true, nil, map[string]bool{"lhc": true, "lhc:finished": true}},
		{job.Claimed, true, nil, map[string]bool{"lhc": true, "lhc:finished": true}},
		{job.Finished, true, []string{"lhc:finished"}, map[string]bool{"lhc": true, "lhc:finished": false}},
		{job.Finished, false, nil, map[string]bool{"lhc:finished": false}},
		{job.Collected, true, nil, map[string]bool{"lhc": true, "lhc:finished": true}},
	}
	for _, tc := range tests {
		st := job.State{Phase: tc.phase}
		if got := Desired(tc.closest, st, listing, "lhc"); !slices.Equal(got, tc.want) {
			t.Errorf("Desired(closest %v, %s) = %v, want %v", tc.closest, tc.phase, got, tc.want)
		}
		for kw, want := range tc.ruled {
			if got := RuledOut(st, kw, "lhc"); got != want {
				t.Errorf("RuledOut(%s, %q) = %v, want %v", tc.phase, kw, got, want)
			}
		}
	}
}
