package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/up-pool/up/project"
)

// TestProjectDescribeBadInput: a describe without one JOB or UNIT, or
// without --data, fails with one line on stderr naming the problem.
func TestProjectDescribeBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"project", "describe"},
		{"project", "describe", "a", "b"},
		{"project", "describe", "12"},
	} {
		code, _, errs := upRun(t, args...)
		if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || errs == "" {
			t.Errorf("up %s: exit %d, stderr %q: want a non-zero exit and one line", strings.Join(args, " "), code, errs)
		}
	}
}

// TestWriteDescription: the human report of a job shows its replicas'
// answers (an unreachable one too), its index nodes' answers and the
// verdict with what would make it run; the JSON keys are snake_case with
// durations under _s.
func TestWriteDescription(t *testing.T) {
	d := &project.Description{Asked: "1", Unit: 1, Jobs: []project.JobDescription{{
		Job: "bafyjob", Unit: 1, Copy: 0, LedgerState: "submitted", App: "hashchain", Keywords: []string{"lhc"}, Replication: 5,
		Replicas: []project.ReplicaAnswer{
			{Node: "12D3KooWaaaaaaaa11111111", Held: true, State: "open", Releases: 2,
				Notes: []project.Note{{Client: "0a0b", Reason: "application not allowed", Code: "not-allowed", AgeS: 3}}},
			{Node: "12D3KooWbbbbbbbb22222222", Error: "unreachable: dial failed"},
		},
		Index: []project.IndexAnswer{{Keyword: "lhc", Node: "12D3KooWcccccccc33333333", Listed: true, Served: 3, Queries: 7, LastQueryS: 12, Declines: 1}},
		Verdict: []project.Reason{{Code: "not-allowed", Why: "released/declined 3 times: application \"hashchain\" not allowed by any client that found it",
			Fix: "a client must allow application hashchain: up client run --project lhc --allow lhc=hashchain"}},
	}}}
	var b bytes.Buffer
	writeDescription(&b, d)
	out := b.String()
	for _, want := range []string{"job bafyjob (unit 1, copy 0): submitted", "its 5 closest nodes say:", "…11111111", "open",
		"not-allowed ×1", "…22222222  unreachable: dial failed", "its index nodes say:", "12s ago",
		"  - released/declined 3 times", "    → a client must allow application hashchain"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	j, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"ledger_state"`, `"replicas"`, `"last_query_s"`, `"verdict"`, `"fix"`, `"age_s"`} {
		if !bytes.Contains(j, []byte(key)) {
			t.Errorf("JSON lacks %s: %s", key, j)
		}
	}
}
