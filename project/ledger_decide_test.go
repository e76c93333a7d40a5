package project

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// decideLedger records, in a fresh ledger, units of one copy (u0 clean,
// u1 failed, u2 adaptive, u3 with a second copy added), two of two
// copies (u4) and a clean result of each first job, with decide as
// given; it validates what was queued and returns the ledger's verdicts,
// grades and queue as text, with the units decided on record and after.
func decideLedger(t *testing.T, decide bool) (state []string, onRecord, after int) {
	t.Helper()
	l, _ := openTestLedger(t)
	now := time.UnixMilli(1_700_000_000_000)
	b := &batchRecord{digest: []byte("d"), source: "t", units: 4, copies: 1, unitIDs: map[int]int64{}}
	var jobs []unitJob
	for i := range 4 {
		jobs = append(jobs, unitJob{idx: i, adaptive: i == 2, PreparedJob: PreparedJob{CID: fmt.Sprintf("u%d-c0", i), Signed: []byte{1}, Listing: []byte{2}}})
	}
	if err := l.record(b, jobs, now); err != nil {
		t.Fatal(err)
	}
	if err := l.Prepare([]PreparedJob{{CID: "u3-c1", Unit: b.unitIDs[3], Copy: 1, Signed: []byte{1}, Listing: []byte{2}}}, now); err != nil {
		t.Fatal(err)
	}
	two := &batchRecord{digest: []byte("e"), source: "t", units: 1, copies: 2, unitIDs: map[int]int64{}}
	if err := l.record(two, []unitJob{{idx: 0, PreparedJob: PreparedJob{CID: "u4-c0", Signed: []byte{1}, Listing: []byte{2}}},
		{idx: 0, PreparedJob: PreparedJob{CID: "u4-c1", Copy: 1, Signed: []byte{1}, Listing: []byte{2}}}}, now); err != nil {
		t.Fatal(err)
	}
	var rs []Result
	for i, c := range []string{"u0-c0", "u1-c0", "u2-c0", "u3-c0", "u4-c0"} {
		r := Result{CID: c, Client: "w", ClientKey: []byte("w"), Output: []byte("out"), At: now}
		if i == 1 {
			r.ExitCode, r.Error = 1, "exit code 1: "
		}
		rs = append(rs, r)
	}
	onRecord, err := l.recordResults(rs, now, decide)
	if err != nil {
		t.Fatal(err)
	}
	after, _ = validateAll(t, l, nil)
	rows, err := l.db.Query(`SELECT j.cid, u.status, COALESCE(u.canonical, ''), COALESCE(r.valid, -1)
		FROM jobs j JOIN units u ON u.id = j.unit LEFT JOIN results r ON r.job = j.id ORDER BY j.cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var cid, status, canonical string
		var valid int
		if err := rows.Scan(&cid, &status, &canonical, &valid); err != nil {
			t.Fatal(err)
		}
		state = append(state, fmt.Sprintf("%s %s %q %d", cid, status, canonical, valid))
	}
	state = append(state, fmt.Sprint("queued ", queued(t, l)))
	if decide { // the verdict's time is its result's recording
		var at, harvested int64
		if err := l.db.QueryRow(`SELECT u.status_at, r.harvested FROM jobs j JOIN units u ON u.id = j.unit JOIN results r ON r.job = j.id
			WHERE j.cid = 'u0-c0'`).Scan(&at, &harvested); err != nil || at != now.UnixMilli() || harvested != at {
			t.Errorf("u0 status_at %d, harvested %d (%v); want both %d", at, harvested, err, now.UnixMilli())
		}
	}
	return state, onRecord, after
}

// TestDecideOnRecord: recording a clean result of a unit of one copy
// decides the unit at once, exactly as validating it afterwards would —
// the same statuses, canonical results, grades and queue — and
// only that unit: a failed result, an adaptive unit, a unit given a
// second copy and a unit of two copies are left to validation. Control:
// with the decision off everything waits for validation, which reaches
// the same ledger.
func TestDecideOnRecord(t *testing.T) {
	decided, onRecord, after := decideLedger(t, true)
	validated, onRecordOff, afterOff := decideLedger(t, false)
	if onRecord != 1 || onRecordOff != 0 {
		t.Fatalf("units decided on record: %d (decision on), %d (off); want 1 and 0", onRecord, onRecordOff)
	}
	if onRecord+after != onRecordOff+afterOff {
		t.Fatalf("units decided in all: %d+%d on, %d+%d off", onRecord, after, onRecordOff, afterOff)
	}
	if !slices.Equal(decided, validated) {
		t.Fatalf("ledger with the decision on record:\n%v\nvalidated afterwards:\n%v", decided, validated)
	}
	if !slices.Contains(decided, `u0-c0 valid "u0-c0" 1`) {
		t.Fatalf("the clean unit of one copy: %v", decided)
	}
}
