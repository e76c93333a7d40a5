package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/up-pool/up/project"
)

// TestHarvestFailure: a harvest that could not read the index or fetch a
// result fails, in one line saying what failed; one that was interrupted,
// or only met copies a node had altered and took another node's, does
// not.
func TestHarvestFailure(t *testing.T) {
	walk := errors.New(`read the index "lhc:finished" (3 attempts): walk to ae7e06e2: no node known`)
	for _, tc := range []struct {
		name string
		rep  project.HarvestReport
		want string // substring of the error; "" for none
	}{
		{"clean", project.HarvestReport{Finished: 4, Recorded: 4, Collected: 4}, ""},
		{"altered copy replaced", project.HarvestReport{Finished: 4, Recorded: 4, RefusedCopies: 1, Errors: []error{errors.New("job x: copy refused")}}, ""},
		{"interrupted", project.HarvestReport{Errors: []error{errors.New("harvest interrupted (run it again to finish): context canceled")}}, ""},
		{"index unreadable", project.HarvestReport{IndexErr: walk, Errors: []error{walk}}, "no node known"},
		{"results not fetched", project.HarvestReport{Finished: 4, Recorded: 2, Refused: 2}, "2 results could not be fetched"},
		{"both", project.HarvestReport{IndexErr: walk, Refused: 1}, "no node known; and 1 results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := harvestFailure(tc.rep)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "harvest failed") {
				t.Fatalf("err %v, want one line starting 'harvest failed' naming %q", err, tc.want)
			}
		})
	}
}
