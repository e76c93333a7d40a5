package scenario

import (
	"strings"
	"testing"
)

// TestDoubleDetail: a job two clients hold unreleased claims of in the
// nodes' logs is described claim by claim, with the nodes holding each;
// a released claim is not a double (control).
func TestDoubleDetail(t *testing.T) {
	s := &sampler{claims: map[string]*logClaim{
		"a": {job: "job-one-key", client: "client-A-key", start: 5, nodes: map[string]bool{"12D3KooWnodeAAA111": true, "12D3KooWnodeBBB222": true}},
		"b": {job: "job-one-key", client: "client-B-key", start: 9, nodes: map[string]bool{"12D3KooWnodeCCC333": true}},
		"c": {job: "job-two-key", client: "client-A-key", start: 1, nodes: map[string]bool{"x": true}},
		"d": {job: "job-two-key", client: "client-B-key", start: 2, released: true, nodes: map[string]bool{"y": true}},
	}}
	d := s.doubleDetail()
	if len(d) != 2 || !strings.Contains(d[0], "start 5, held by 2 nodes [AAA111 BBB222]") || !strings.Contains(d[1], "start 9, held by 1 nodes [CCC333]") {
		t.Fatalf("detail %q", d)
	}
}
