package credit_test

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/up-pool/up/credit"
)

func TestSumTwoProjects(t *testing.T) {
	f := newFixture(t)
	l1 := f.sign(t, f.receipt("lhc", 1, 0, 3), "lhc")
	l2 := f.sign(t, f.receipt("lhc", 2, 3, 2), "lhc")
	c1 := f.sign(t, f.receipt("climate", 1, 0, 4), "climate")
	forged := f.sign(t, f.receipt("lhc", 3, 5, 100), "climate") // lhc's name, climate's key
	sources := []credit.Source{
		{From: "nodeA", Receipts: [][]byte{l1, l2, c1}},
		{From: "nodeB", Receipts: [][]byte{l2, c1}},
		{From: "liar", Receipts: [][]byte{forged}},
	}
	got := credit.Sum(f.client, sources, f.v, t0)
	if got.Total != 9 || got.Results != 9 || len(got.Projects) != 2 {
		t.Fatalf("sum %d (%d results, %d projects), want 9 from lhc 5 + climate 4: %+v", got.Total, got.Results, len(got.Projects), got)
	}
	if p := got.Projects[1]; p.Project != "lhc" || p.Total != 5 || p.Seq != 2 || p.Sources != 2 || p.Receipts != 2 {
		t.Errorf("lhc: %+v, want total 5 at seq 2 from 2 nodes, 2 receipts", p)
	}
	if len(got.Rejected) != 1 || got.Rejected[0].From != "liar" || !strings.Contains(got.Rejected[0].Err, "does not verify") {
		t.Errorf("rejected %+v, want the liar's forged receipt", got.Rejected)
	}
	if len(got.Conflicts) != 0 {
		t.Errorf("conflicts %+v, want none", got.Conflicts)
	}
	// Control: without the liar, nothing is rejected and the sum is the same.
	if c := credit.Sum(f.client, sources[:2], f.v, t0); c.Total != 9 || len(c.Rejected) != 0 {
		t.Errorf("without the liar: %+v", c)
	}
}

func TestSumOtherClientAndContradictions(t *testing.T) {
	f := newFixture(t)
	other := f.receipt("lhc", 1, 0, 2)
	other.Client = f.keys["node"].Public().(ed25519.PublicKey)
	bad := f.receipt("lhc", 2, 2, 2)
	bad.Total, bad.Results = 10, 10 // should be 4 after receipt 1's 2
	twin := f.receipt("lhc", 1, 0, 1)
	sources := []credit.Source{{From: "n", Receipts: [][]byte{
		f.sign(t, f.receipt("lhc", 1, 0, 2), "lhc"), f.sign(t, bad, "lhc"), f.sign(t, twin, "lhc"), f.sign(t, other, "lhc"),
	}}}
	got := credit.Sum(f.client, sources, f.v, t0)
	if len(got.Rejected) != 1 || !strings.Contains(got.Rejected[0].Err, "another client") {
		t.Errorf("rejected %+v, want the other client's receipt", got.Rejected)
	}
	if len(got.Conflicts) != 2 {
		t.Fatalf("conflicts %+v, want the twin receipt 1 and receipt 2's total", got.Conflicts)
	}
	if got.Total != 10 {
		t.Errorf("total %d, want the newest receipt's 10 (conflicts are reported, not corrected)", got.Total)
	}
}
