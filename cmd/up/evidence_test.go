package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/up-pool/up/node"
	"github.com/up-pool/up/pool"
)

// TestNodeEvidence: up node evidence prints a node's refused forgeries as
// a table with a count per sender, and as JSON with --json.
func TestNodeEvidence(t *testing.T) {
	rep := node.EvidenceReport{Role: "node", Capacity: pool.MaxEvidence, Records: []pool.Evidence{
		{Seq: 0, At: 1700000000000, Sender: "node007", Peer: "12D3Koo", Protocol: "/up/job/sync/1.0.0",
			Job: "0155a0e40220abcdef", Phase: "collected", Reason: "state without proof: collected at 5 without the project's signature"},
		{Seq: 1, At: 1700000001000, Sender: "node007", Peer: "12D3Koo", Protocol: "/up/job/store/1.0.0",
			Job: "0155a0e40220abcdef", Phase: "finished", Reason: "state with a forged proof"},
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/evidence" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(rep)
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	if code := run([]string{"node", "evidence", "--http", srv.URL}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"SENDER", "node007", "collected", "without the project's signature", "node007: 2 refused"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"node", "evidence", "--http", srv.URL, "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut.String())
	}
	var got node.EvidenceReport
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got.Records) != 2 || got.Records[1].Phase != "finished" {
		t.Fatalf("--json: %v, %+v", err, got)
	}
	if !strings.Contains(out.String(), `"at_ms"`) {
		t.Fatalf("--json is not snake_case:\n%s", out.String())
	}
}
