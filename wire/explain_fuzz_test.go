package wire_test

import (
	"testing"

	"github.com/up-pool/up/wire"
)

// explainMsgs are valid explain-protocol messages used as fuzz seeds.
func explainMsgs() []wire.Validator {
	key := make([]byte, 36)
	note := wire.ExplainNote{Client: []byte("peer"), Reason: wire.SkipNotAllowed, AgeMS: 1500}
	return []wire.Validator{
		&wire.JobExplainRequest{Job: key},
		&wire.JobExplainResponse{},
		&wire.JobExplainResponse{Held: true, State: "claimed", Claimant: []byte("peer"), ClaimAgeMS: 3, Results: 1, Releases: 7, Notes: []wire.ExplainNote{note}},
		&wire.IndexExplainRequest{Keyword: "lhc", Job: key},
		&wire.IndexExplainResponse{LastQueryMS: -1},
		&wire.IndexExplainResponse{Listed: true, Served: 4, Queries: 9, LastQueryMS: 20, Declines: 2, Notes: []wire.ExplainNote{note, note}},
	}
}

// FuzzDecodeExplainMessages decodes arbitrary bytes as every explain
// message: never a panic; what decodes re-encodes and decodes the same.
func FuzzDecodeExplainMessages(f *testing.F) {
	for _, m := range explainMsgs() {
		b, err := wire.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, proto := range explainMsgs() {
			checkDecode(t, proto, b)
		}
	})
}

// TestExplainBounds: explain answers refuse over-long note lists, unknown
// reasons, negative ages and counts (controls: the same at their bounds).
func TestExplainBounds(t *testing.T) {
	note := wire.ExplainNote{Client: []byte("peer"), Reason: wire.SkipFailed}
	notes := func(n int) []wire.ExplainNote {
		out := make([]wire.ExplainNote, n)
		for i := range out {
			out[i] = note
		}
		return out
	}
	bad := note
	bad.Reason = 99
	for _, c := range []struct {
		name string
		msg  wire.Validator
		ok   bool
	}{
		{"notes at bound", &wire.JobExplainResponse{Notes: notes(wire.MaxExplainNotes)}, true},
		{"notes over bound", &wire.JobExplainResponse{Notes: notes(wire.MaxExplainNotes + 1)}, false},
		{"unknown reason", &wire.IndexExplainResponse{LastQueryMS: -1, Notes: []wire.ExplainNote{bad}}, false},
		{"never queried", &wire.IndexExplainResponse{LastQueryMS: -1}, true},
		{"negative age", &wire.IndexExplainResponse{LastQueryMS: -2}, false},
		{"negative releases", &wire.JobExplainResponse{Releases: -1}, false},
		{"no keyword", &wire.IndexExplainRequest{Job: []byte{1}}, false},
	} {
		if err := c.msg.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", c.name, err, c.ok)
		}
	}
	if wire.SkipNotAllowed.String() != "application not allowed" || wire.SkipReason(99).String() != "reason 99" {
		t.Errorf("reason names: %q, %q", wire.SkipNotAllowed, wire.SkipReason(99))
	}
}
