package project

import (
	"strings"
	"testing"
)

// TestJudge: the verdict counts a release once however many replicas
// report it, says "any client" only when no client gave another blocking
// reason, reports unqueried keywords only when no keyword of the job was
// queried, and a running job gets nothing but that it runs.
func TestJudge(t *testing.T) {
	na := Note{Client: "c1", Code: "not-allowed"}
	su := Note{Client: "c2", Code: "same-unit"}
	open := func(notes ...Note) ReplicaAnswer {
		return ReplicaAnswer{Node: "n", Held: true, State: "open", Releases: len(notes), Notes: notes}
	}
	listed := func(kw string, queries int, lastS float64, notes ...Note) IndexAnswer {
		return IndexAnswer{Keyword: kw, Node: "i", Listed: true, Queries: queries, LastQueryS: lastS, Declines: len(notes), Notes: notes}
	}
	cases := []struct {
		name     string
		replicas []ReplicaAnswer
		index    []IndexAnswer
		want     []string // each a substring of one verdict line, in order
		not      []string
	}{
		{name: "not allowed by any client", replicas: []ReplicaAnswer{open(na, na), open(na, na)}, index: []IndexAnswer{listed("lhc", 3, 1, na)},
			want: []string{"released/declined 3 times: application \"app\" not allowed by any client that found it"}},
		{name: "mixed reasons", replicas: []ReplicaAnswer{open(na)}, index: []IndexAnswer{listed("lhc", 3, 1, su)},
			want: []string{"1 times by 1 clients: application \"app\" not allowed", "by 1 clients that already ran a copy"},
			not:  []string{"any client", "needs another client"}},
		{name: "one keyword of two queried", replicas: []ReplicaAnswer{open()}, index: []IndexAnswer{listed("lhc", 1, 5), listed("gpu", 0, -1)},
			want: []string{"no client has taken it yet"}, not: []string{"no client queried"}},
		{name: "no keyword queried lately", replicas: []ReplicaAnswer{open()}, index: []IndexAnswer{listed("lhc", 4, 3600), listed("gpu", 0, -1)},
			want: []string{`no client queried keyword "gpu"`, `no client queried keyword "lhc"`}},
		{name: "running", replicas: []ReplicaAnswer{{Node: "n", Held: true, State: "claimed", Claimant: "c9", Releases: 1, Notes: []Note{na}}},
			index: []IndexAnswer{listed("lhc", 0, -1, su)}, want: []string{"claimed by client c9"}, not: []string{"not allowed", "no client queried"}},
		{name: "unreachable", replicas: []ReplicaAnswer{{Node: "n", Error: "unreachable: x"}}, want: []string{"none of its 5 nodes answered"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jd := &JobDescription{LedgerState: StateSubmitted, App: "app", Keywords: []string{"gpu", "lhc"}, Replication: 5, Replicas: c.replicas, Index: c.index}
			var lines []string
			for _, r := range judge(jd, "lhc") {
				lines = append(lines, r.Why)
			}
			all := strings.Join(lines, "\n")
			if len(lines) != len(c.want) {
				t.Fatalf("verdict:\n%s\nwant %d lines", all, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %d %q, want %q", i, lines[i], w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(all, n) {
					t.Errorf("verdict says %q:\n%s", n, all)
				}
			}
		})
	}
}
