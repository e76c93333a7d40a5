package project

import (
	"strings"
	"testing"
	"time"
)

// TestReportStuckUnits: the units without a canonical result older than
// the threshold are listed oldest first with the reason the ledger can
// tell; a valid unit and a young one are not (the controls), and the
// limit bounds the list, not the total.
func TestReportStuckUnits(t *testing.T) {
	l, _ := openTestLedger(t)
	m := func(n int) time.Time { return reportT0.Add(time.Duration(n) * time.Minute) }
	now := m(120)
	fillAt(t, l, "prep", 1, 1, m(0))          // never acknowledged
	sub, _ := fillAt(t, l, "sub", 1, 1, m(1)) // submitted, no result
	submitAt(t, l, m(2), sub[0][0])
	half, _ := fillAt(t, l, "half", 1, 2, m(3)) // one of two results
	submitAt(t, l, m(4), half[0]...)
	harvestAt(t, l, m(30), "w1", "x", half[0][0])
	dis, disIDs := fillAt(t, l, "dis", 1, 2, m(5)) // the copies disagree
	submitAt(t, l, m(6), dis[0]...)
	harvestAt(t, l, m(31), "w1", "x", dis[0][0])
	harvestAt(t, l, m(32), "w2", "y", dis[0][1])
	if got := validateAt(t, l, m(33), disIDs[0]); got[0] != UnitInconclusive {
		t.Fatalf("disagreeing unit: %s", got[0])
	}
	// The harvest that found them so issues a third copy.
	if err := l.Prepare([]PreparedJob{{CID: "dis-u0-c2", Unit: disIDs[0], Copy: 2, Signed: []byte{1}, Listing: []byte{2}}}, m(34)); err != nil {
		t.Fatal(err)
	}
	submitAt(t, l, m(60), "dis-u0-c2")
	lost, _ := fillAt(t, l, "lost", 1, 1, m(7)) // lost, its replacement submitted
	submitAt(t, l, m(8), lost[0][0])
	if _, err := l.Unservable([]string{lost[0][0]}, m(20)); err != nil {
		t.Fatal(err)
	}
	unit, _, _ := l.UnitOf(lost[0][0])
	if _, err := l.declareLost([]lostJob{{cid: lost[0][0], copy: &PreparedJob{CID: "lost-u0-c1", Unit: unit, Signed: []byte{1}, Listing: []byte{2}}}}, m(50)); err != nil {
		t.Fatal(err)
	}
	submitAt(t, l, m(51), "lost-u0-c1")
	unserv, _ := fillAt(t, l, "unserv", 1, 1, m(9)) // finished, unservable
	submitAt(t, l, m(10), unserv[0][0])
	if _, err := l.Unservable([]string{unserv[0][0]}, m(100)); err != nil {
		t.Fatal(err)
	}
	done, doneIDs := fillAt(t, l, "done", 1, 1, m(0)) // control: valid
	harvestAt(t, l, m(40), "w1", "x", done[0][0])
	validateAt(t, l, m(40), doneIDs[0])
	fillAt(t, l, "young", 1, 1, m(115)) // control: 5 min old

	st, err := l.StuckUnits(now, 10*time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ batch, job, reason string }{
		{"prep.yaml", "prep-u0-c0", "prepared 2h0m ago, not acknowledged by its replicas: run 'up project submit' on prep.yaml again"},
		{"sub.yaml", "sub-u0-c0", "submitted 1h58m ago, no result"},
		{"half.yaml", "half-u0-c1", "1 of 2 successful results: waiting for another copy; submitted 1h56m ago, no result"},
		{"dis.yaml", "dis-u0-c2", "copies disagree (2 results, no quorum): waiting for a tie-breaker; submitted 1h0m ago, no result"},
		{"lost.yaml", "lost-u0-c1", "1 copy lost (no node could serve the result); submitted 1h9m ago, no result"},
		{"unserv.yaml", "unserv-u0-c0", "finished, but no node has served the result for 20m"},
	}
	if st.Total != len(want) || len(st.Units) != len(want) || st.After != 600 {
		t.Fatalf("%d stuck (%d listed, after %v s), want %d: %+v", st.Total, len(st.Units), st.After, len(want), st.Units)
	}
	for i, w := range want {
		u := st.Units[i]
		if u.Batch != w.batch || u.Job != w.job || u.Reason != w.reason {
			t.Errorf("stuck %d: %s %s %q; want %s %s %q", i, u.Batch, u.Job, u.Reason, w.batch, w.job, w.reason)
		}
	}
	if u := st.Units[4]; u.Issued != 2 || u.Lost != 1 || u.Submitted != 1 || u.Age != 113*time.Minute {
		t.Errorf("lost unit: %+v", u)
	}
	st, err = l.StuckUnits(now, 10*time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != len(want) || len(st.Units) != 2 || st.Units[1].Batch != "sub.yaml" {
		t.Fatalf("limit 2: %d total, %+v", st.Total, st.Units)
	}
	// A threshold over everyone's age lists none.
	if st, err = l.StuckUnits(now, 3*time.Hour, 10); err != nil || st.Total != 0 || len(st.Units) != 0 {
		t.Fatalf("after 3 h: %+v %v", st, err)
	}
}

// TestReportStuckReasons: the reason of each kind of unit, pure.
func TestReportStuckReasons(t *testing.T) {
	for _, c := range []struct {
		u    StuckUnit
		want string
	}{
		{StuckUnit{Status: UnitOpen, Copies: 2, Submitted: 1, Results: 2, Waiting: 3 * time.Minute},
			"copies disagree (2 results, no quorum): waiting for a tie-breaker; submitted 3m ago, no result"},
		{StuckUnit{Status: UnitOpen, Copies: 2, Submitted: 1, Results: 2, Failed: 1, Waiting: 3 * time.Minute},
			"1 of 2 successful results: waiting for another copy; 1 copy failed; submitted 3m ago, no result"},
		{StuckUnit{Status: UnitOpen, Copies: 1, Results: 1, Failed: 1},
			"1 copy failed; no copy waiting: the next harvest validates it"},
		{StuckUnit{Status: UnitOpen, Copies: 1, Submitted: 1, Waiting: 30 * time.Second}, "submitted 30s ago, no result"},
		{StuckUnit{Status: UnitInconclusive, Copies: 2, Results: 4, Lost: 1},
			"copies disagree (4 results, no quorum), no copy waiting: the next harvest issues another, unless the unit has had its most copies (harvest --max-copies); 1 copy lost (no node could serve the result)"},
	} {
		if got := c.u.reason(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.u, got, c.want)
		}
	}
	if s := roundAge(90 * time.Minute); !strings.HasPrefix(s, "1h30m") || strings.HasSuffix(s, "0s") {
		t.Fatalf("roundAge: %q", s)
	}
}
