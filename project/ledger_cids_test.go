package project

import (
	"fmt"
	"testing"
	"time"
)

// cidsIndexed returns how many jobs job_cids holds and its upto.
func cidsIndexed(t *testing.T, l *Ledger) (n, upto int64) {
	t.Helper()
	if err := l.db.QueryRow(`SELECT (SELECT COUNT(*) FROM job_cids), (SELECT upto FROM job_cids_upto)`).Scan(&n, &upto); err != nil {
		t.Fatal(err)
	}
	return n, upto
}

// TestCIDIndexFilledInBulk: jobs recorded are left out of the CID index
// until cidsFillEvery of them wait, then all go in at once; the process
// that recorded them finds them by id meanwhile.
func TestCIDIndexFilledInBulk(t *testing.T) {
	l, _ := openTestLedger(t)
	first := fillLedger(t, l, "a", 100, 1)
	if n, upto := cidsIndexed(t, l); n != 0 || upto != 0 {
		t.Fatalf("after 100 jobs: %d indexed up to %d, want none", n, upto)
	}
	st, err := l.states([]string{first[0][0], first[99][0]})
	if err != nil || st[first[0][0]] != StatePrepared || st[first[99][0]] != StatePrepared {
		t.Fatalf("states of jobs not indexed yet: %v, %v", st, err)
	}
	if n, _ := cidsIndexed(t, l); n != 0 {
		t.Fatalf("a lookup of known jobs filled the index (%d)", n)
	}
	fillLedger(t, l, "b", cidsFillEvery, 1) // in records of 1,000 jobs
	if n, upto := cidsIndexed(t, l); n != upto || n < cidsFillEvery || n != 4100 {
		t.Fatalf("after %d jobs: %d indexed up to %d, want the 4,100 recorded by the record that made %d wait", 100+cidsFillEvery, n, upto, cidsFillEvery)
	}
}

// TestCIDIndexFindsAnotherProcesssJobs: a ledger opened on the same file
// (another process: its Ledger.known empty) finds by CID the jobs the
// first recorded after it opened, though they wait out of the index —
// its lookup fills the index first; a restart finds them too (the open
// fills it). Control: the index itself holds none of them before.
func TestCIDIndexFindsAnotherProcesssJobs(t *testing.T) {
	l, path := openTestLedger(t)
	other, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	units := fillLedger(t, l, "a", 10, 1)
	cids := make([]string, len(units))
	for i, u := range units {
		cids[i] = u[0]
	}
	tx, err := other.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	found, err := other.lookUpRefs(tx, cids)
	tx.Rollback()
	if err != nil || len(found) != 0 {
		t.Fatalf("control: %d of the jobs in the index before a fill (%v)", len(found), err)
	}
	st, err := other.states(cids)
	if err != nil || len(st) != len(cids) {
		t.Fatalf("another process found %d of %d jobs by CID: %v", len(st), len(cids), err)
	}
	if state, err := other.Known(cids[3]); err != nil || state != StatePrepared {
		t.Fatalf("Known(%s) = %q, %v", cids[3], state, err)
	}
	more := fillLedger(t, l, "b", 5, 1)
	// Its harvest records their results (refsOf fills the index first).
	now := time.Now()
	if err := other.RecordResults([]Result{{CID: more[2][0], Client: "w", ClientKey: make([]byte, 32), Output: []byte("ok"), At: now}}, now); err != nil {
		t.Fatalf("another process records the result of a job recorded after its last fill: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if n, upto := cidsIndexed(t, again); n != 15 || upto != 15 {
		t.Fatalf("after a restart: %d indexed up to %d, want 15", n, upto)
	}
	if st, err := again.states([]string{more[4][0]}); err != nil || st[more[4][0]] != StatePrepared {
		t.Fatalf("after a restart: %v, %v", st, err)
	}
}

// TestCIDIndexTakesSharedSuffixes: two jobs whose CIDs end alike (the
// index's key) are both indexed and each found as itself.
func TestCIDIndexTakesSharedSuffixes(t *testing.T) {
	l, _ := openTestLedger(t)
	const tail = "-the-same-last-16"
	fillLedgerNamed(t, l, "s", 2, 1, func(s string) string { return s + tail })
	if err := l.indexCIDs(); err != nil {
		t.Fatal(err)
	}
	other, err := OpenLedger(l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for i := range 2 {
		c := fmt.Sprintf("s-u%d-c0%s", i, tail)
		if st, err := other.states([]string{c}); err != nil || len(st) != 1 || st[c] != StatePrepared {
			t.Fatalf("job %s: %v, %v", c, st, err)
		}
	}
}
