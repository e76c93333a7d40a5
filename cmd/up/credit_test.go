package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/up-pool/up/credit"
)

// TestCreditShowBadInput: a bad CLIENT, a missing --data or a directory
// that is no client's or project's fails in one line before joining.
func TestCreditShowBadInput(t *testing.T) {
	f := newFixture(t)
	crt := writeFile(t, filepath.Join(t.TempDir(), "x.crt"), "not a certificate")
	for _, args := range [][]string{
		{"credit", "show"},
		{"credit", "show", "--data", f.n1, "--bootstrap", "/ip4/127.0.0.1/tcp/1"},
		{"credit", "show", "--data", f.n1, "abcd"},
		{"credit", "show", "a", "b"},
		{"credit", "show", "--data", t.TempDir(), crt},
	} {
		code, _, errs := upRun(t, args...)
		if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || errs == "" {
			t.Errorf("up %s: exit %d, stderr %q: want a non-zero exit and one line", strings.Join(args, " "), code, errs)
		}
	}
	if _, err := parseClientKey(strings.Repeat("ab", 32)); err != nil {
		t.Errorf("a 64-digit hex key: %v", err) // control
	}
	if _, err := parseClientKey("abcd"); err == nil {
		t.Error("a 2-byte hex key parsed")
	}
}

// TestWriteCredit: the report names the client, sums the projects, lists
// each project's newest receipt and every rejection with its sender.
func TestWriteCredit(t *testing.T) {
	c := credit.Credit{Client: bytes.Repeat([]byte{0xab}, 32), Total: 9, Results: 9,
		Projects: []credit.ProjectCredit{{Project: "cms", Total: 4, Results: 4, Seq: 1, Created: 1, Sources: 5},
			{Project: "lhc", Total: 5, Results: 5, Seq: 2, Created: 1, Sources: 4}},
		Rejected:  []credit.Rejection{{From: "12D3KooWliar", Project: "lhc", Seq: 3, Err: "credit receipt signature does not verify"}},
		Conflicts: []credit.Conflict{{Project: "lhc", Seq: 2, Why: "total 50 is not receipt 1's 3 plus the 2 it credits"}}}
	var b bytes.Buffer
	writeCredit(&b, c, 5, 5)
	out := b.String()
	for _, want := range []string{"client " + strings.Repeat("ab", 32) + ": 9 credit from 9 valid results, 2 projects (5 of its 5 nodes answered)",
		"cms", "lhc", "#2", "rejected 1 receipts", "from 12D3KooWliar: credit receipt signature does not verify", "lhc receipt #2: total 50"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
