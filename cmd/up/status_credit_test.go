package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/up-pool/up/project"
)

// TestProjectStatusFlagsDuplicates: a client's duplicate copies of units
// (flagged, not paid) show on its credit line; a client without any shows
// the line as before.
func TestProjectStatusFlagsDuplicates(t *testing.T) {
	var b bytes.Buffer
	st := project.Stats{Credit: []project.Credit{{Client: "greedy", Valid: 1, Duplicate: 1}, {Client: "honest", Valid: 1}}}
	if err := printProjectStatus(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "greedy") && !strings.Contains(l, "1 duplicate"):
			t.Fatalf("greedy's credit line does not flag its duplicate: %q", l)
		case strings.Contains(l, "honest") && strings.Contains(l, "duplicate"):
			t.Fatalf("honest's credit line flags a duplicate: %q", l)
		}
	}
}
