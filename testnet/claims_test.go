package testnet_test

import (
	"maps"
	"testing"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/testnet"
)

// TestClaimedTwice: a job is claimed twice when unreleased claims of two
// clients are logged for it, at one node or at two; one client's claim
// at several nodes, or a claim given back, is not a double claim.
func TestClaimedTwice(t *testing.T) {
	rec := func(job, client string, released bool) claimnet.Record {
		return claimnet.Record{Job: []byte(job), Record: claim.Record{Client: []byte(client), Released: released}}
	}
	for _, tc := range []struct {
		name string
		logs [][]claimnet.Record
		want map[string]int
	}{
		{"no logs", nil, map[string]int{}},
		{"one client at every node", [][]claimnet.Record{{rec("j", "a", false)}, {rec("j", "a", false)}}, map[string]int{}},
		{"two clients at two nodes", [][]claimnet.Record{{rec("j", "a", false)}, {rec("j", "b", false)}}, map[string]int{"j": 2}},
		{"two clients at one node", [][]claimnet.Record{{rec("j", "a", false), rec("j", "b", false), rec("k", "a", false)}}, map[string]int{"j": 2}},
		{"one claim given back", [][]claimnet.Record{{rec("j", "a", true)}, {rec("j", "b", false)}}, map[string]int{}},
		{"three clients", [][]claimnet.Record{{rec("j", "a", false)}, {rec("j", "b", false), rec("j", "c", false)}}, map[string]int{"j": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := testnet.ClaimedTwice(tc.logs...); !maps.Equal(got, tc.want) {
				t.Fatalf("ClaimedTwice = %v, want %v", got, tc.want)
			}
		})
	}
}
