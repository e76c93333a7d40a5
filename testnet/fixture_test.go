package testnet_test

import (
	"slices"
	"testing"
	"time"

	"github.com/up-pool/up/testnet"
)

// TestFixture: a fixture's project submits jobs that every one of their
// holders keeps, listed under the project's name with an hour to finish
// unless told otherwise, and dated by the fixture's clock.
func TestFixture(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 5, Seed: 9})
	for _, tc := range []struct {
		name         string
		jobs         testnet.Jobs
		wantKeywords []string
		wantTFinish  time.Duration
	}{
		{"defaults", testnet.Jobs{}, []string{"lhc"}, time.Hour},
		{"keywords and T_finish", testnet.Jobs{Keywords: []string{"lhc", "lhc:mem:small"}, TFinish: time.Minute}, []string{"lhc", "lhc:mem:small"}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := testnet.SubmitJobs(t, f.Project, 3, tc.jobs)
			if len(keys) != 3 {
				t.Fatalf("%d keys for 3 jobs", len(keys))
			}
			for _, k := range keys {
				holders := f.Net.Holders(k)
				if len(holders) == 0 {
					t.Fatalf("job %x held nowhere", k)
				}
				h, _ := f.Net.Node(holders[0]).Pool().Lookup(k)
				kw := slices.Clone(h.Keywords)
				slices.Sort(kw)
				if !slices.Equal(kw, tc.wantKeywords) || time.Duration(h.TFinish)*time.Millisecond != tc.wantTFinish {
					t.Fatalf("job held with keywords %v, T_finish %d ms", h.Keywords, h.TFinish)
				}
				if h.Created != f.Clock.Now().UnixMilli() {
					t.Fatalf("job created at %d, not on the fixture's clock (%d)", h.Created, f.Clock.Now().UnixMilli())
				}
			}
		})
	}
}
