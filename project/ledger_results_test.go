package project

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRecordEmptyAndErrorResults: results with no output — a job that
// printed nothing, one that exited 3, one a limit killed — each get
// exactly one results row with their outcome (exit code, error, which
// limit), and their units are validated: the clean one is valid, the
// failed ones get another copy (BOINC: an error result is not valid).
func TestRecordEmptyAndErrorResults(t *testing.T) {
	l, _ := openTestLedger(t)
	cids := fillLedger(t, l, "b", 3, 1)
	now := time.Now()
	rs := []Result{
		{CID: cids[0][0], Client: "w", ClientKey: []byte("w"), Output: nil, At: now},
		{CID: cids[1][0], Client: "w", ClientKey: []byte("w"), Output: nil, ExitCode: 3, Error: "exit code 3: ", At: now},
		{CID: cids[2][0], Client: "w", ClientKey: []byte("w"), Output: []byte{}, ExitCode: 137, Error: "killed: memory limit", At: now},
	}
	onRecord, err := l.recordResults(rs, now, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		var n, code int
		var msg, killed string
		if err := l.db.QueryRow(`SELECT COUNT(*), COALESCE(MAX(exit_code), -1), COALESCE(MAX(error), ''), COALESCE(MAX(killed), '') FROM results WHERE cid = ?`, r.CID).Scan(&n, &code, &msg, &killed); err != nil {
			t.Fatal(err)
		}
		wantKilled := ""
		if i == 2 {
			wantKilled = "memory limit"
		}
		if n != 1 || code != r.ExitCode || msg != r.Error || killed != wantKilled {
			t.Errorf("result %d: %d rows, exit %d, error %q, killed %q; want 1 row, exit %d, error %q, killed %q",
				i, n, code, msg, killed, r.ExitCode, r.Error, wantKilled)
		}
	}
	decided, extra := validateAll(t, l, nil)
	if onRecord != 1 || decided != 0 || len(extra) != 2 {
		t.Fatalf("decided %d units on record and %d after, %d due another copy; want the clean one valid as recorded and the 2 failed ones reissued",
			onRecord, decided, len(extra))
	}
	// The results are read back as they were stored.
	var got []Result
	if err := l.EachResult(func(r Result, _ int, _ string) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("EachResult gave %d results, want 3", len(got))
	}
	for _, r := range got {
		if r.CID == cids[2][0] && r.Killed != "memory limit" {
			t.Errorf("result %s read back killed by %q, want the memory limit", r.CID, r.Killed)
		}
	}
}

// TestRecordResultTwice: recording the same job's result from the same
// client again is a no-op; from another client it is an error naming the
// job, and nothing of it is recorded.
func TestRecordResultTwice(t *testing.T) {
	l, _ := openTestLedger(t)
	cids := fillLedger(t, l, "b", 2, 1)
	now := time.Now()
	first := Result{CID: cids[0][0], Client: "w", ClientKey: []byte("w"), Output: []byte("x"), At: now}
	if err := l.RecordResults([]Result{first}, now); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordResults([]Result{first}, now); err != nil {
		t.Fatalf("the same result again: %v, want nil", err)
	}
	other := Result{CID: cids[0][0], Client: "v", ClientKey: []byte("v"), Output: []byte("y"), At: now}
	second := Result{CID: cids[1][0], Client: "w", ClientKey: []byte("w"), Output: []byte("x"), At: now}
	err := l.RecordResults([]Result{second, other}, now)
	if !errors.Is(err, ErrResultConflict) || !strings.Contains(err.Error(), cids[0][0]) {
		t.Fatalf("another client's result for a recorded job: %v, want ErrResultConflict naming %s", err, cids[0][0])
	}
	var n int
	if err := l.db.QueryRow(`SELECT COUNT(*) FROM results`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d results after the conflict (%v), want 1: the failed transaction records nothing", n, err)
	}
}

// TestMigrateKilled: a ledger written before results.killed gets the
// column when it opens, filled from the error text of its results.
func TestMigrateKilled(t *testing.T) {
	l, path := openTestLedger(t)
	cids := fillLedger(t, l, "b", 2, 1)
	if _, err := l.db.Exec(`ALTER TABLE results DROP COLUMN killed`); err != nil {
		t.Fatal(err)
	}
	for i, msg := range []string{"killed: cpu limit", "exit code 3: boom"} {
		if _, err := l.db.Exec(`INSERT INTO results(job, cid, client, client_key, output, exit_code, error, cpu_ms, wall_ms, at, harvested)
			VALUES((SELECT id FROM jobs WHERE cid = ?1), ?1, 'w', x'77', x'', 1, ?2, 0, 0, 0, 0)`, cids[i][0], msg); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	l2, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	var killed []string
	if err := l2.EachResult(func(r Result, _ int, _ string) error { killed = append(killed, r.Killed); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(killed, ",") != "cpu limit," {
		t.Fatalf("killed after the migration: %q, want the cpu limit and none", killed)
	}
}

// TestEnsureUnitCopies: EnsureUnit finds an existing unit, and refuses
// one recorded with another number of copies.
func TestEnsureUnitCopies(t *testing.T) {
	l, _ := openTestLedger(t)
	b, _, err := l.Batch([]byte("d"), "f", 1, 2, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	u, err := l.EnsureUnit(b, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := l.EnsureUnit(b, 0, 2); err != nil || again != u {
		t.Fatalf("EnsureUnit again: %d %v, want %d", again, err, u)
	}
	if _, err := l.EnsureUnit(b, 0, 3); err == nil || !strings.Contains(err.Error(), "has 2 copies, asked 3") {
		t.Fatalf("EnsureUnit with other copies: %v, want the mismatch named", err)
	}
}
