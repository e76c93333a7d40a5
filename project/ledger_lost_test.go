package project

import (
	"database/sql"
	"strings"
	"testing"
	"time"
)

// unservableSince is a job's unservable_since (0: NULL).
func unservableSince(t *testing.T, l *Ledger, cid string) int64 {
	t.Helper()
	var since sql.NullInt64
	if err := l.db.QueryRow(`SELECT unservable_since FROM jobs WHERE cid = ?`, cid).Scan(&since); err != nil {
		t.Fatal(err)
	}
	return since.Int64
}

// TestMigrateUnservable: a ledger written before jobs.unservable_since
// opens, gets the column (NULL for every job), and keeps a loss timer
// from then on, also across a reopen.
func TestMigrateUnservable(t *testing.T) {
	l, path := openTestLedger(t)
	cids := fillLedger(t, l, "b", 2, 1)
	if _, err := l.db.Exec(`ALTER TABLE jobs DROP COLUMN unservable_since`); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2, err := OpenLedger(path)
	if err != nil {
		t.Fatalf("open a ledger without jobs.unservable_since: %v", err)
	}
	if got := unservableSince(t, l2, cids[0][0]); got != 0 {
		t.Fatalf("unservable_since after the migration: %d, want NULL", got)
	}
	at := time.UnixMilli(1_700_000_000_000)
	if _, err := l2.Unservable([]string{cids[0][0]}, at); err != nil {
		t.Fatal(err)
	}
	l2.Close()
	l3, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	if got := unservableSince(t, l3, cids[0][0]); got != at.UnixMilli() {
		t.Fatalf("unservable_since after a reopen: %d, want %d", got, at.UnixMilli())
	}
}

// TestUnservableTimer: the first time a job is found unservable stands;
// a job with a result, or a lost one, gets no timer; recording the result
// or clearing forgets it.
func TestUnservableTimer(t *testing.T) {
	l, _ := openTestLedger(t)
	cids := fillLedger(t, l, "b", 3, 1)
	a, b, c := cids[0][0], cids[1][0], cids[2][0]
	t0 := time.UnixMilli(1_700_000_000_000)
	if err := l.RecordResults([]Result{{CID: c, Client: "w", ClientKey: []byte("w"), At: t0}}, t0); err != nil {
		t.Fatal(err)
	}
	since, err := l.Unservable([]string{a, b, c}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(since) != 2 || !since[a].Equal(t0) || !since[b].Equal(t0) {
		t.Fatalf("since %v: want a and b since t0, not c (harvested)", since)
	}
	since, err = l.Unservable([]string{a, b}, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !since[a].Equal(t0) || !since[b].Equal(t0) {
		t.Fatalf("since %v after a second harvest: want t0 kept", since)
	}
	if err := l.ClearUnservable([]string{a}); err != nil {
		t.Fatal(err)
	}
	if got := unservableSince(t, l, a); got != 0 {
		t.Fatalf("a cleared: since %d, want NULL", got)
	}
	if err := l.RecordResults([]Result{{CID: b, Client: "w", ClientKey: []byte("w"), At: t0}}, t0); err != nil {
		t.Fatal(err)
	}
	if got := unservableSince(t, l, b); got != 0 {
		t.Fatalf("b's result recorded: since %d, want NULL", got)
	}
}

// TestDeclareLost: a job with a loss timer is declared lost once, with
// its unit's replacement numbered after the unit's highest copy; a job
// without a timer, or with a result, is not declared; copies issued leave
// the lost job out.
func TestDeclareLost(t *testing.T) {
	l, _ := openTestLedger(t)
	cids := fillLedger(t, l, "b", 2, 2)
	t0 := time.UnixMilli(1_700_000_000_000)
	lost, other := cids[0][0], cids[1][0]
	if _, err := l.Unservable([]string{lost}, t0); err != nil {
		t.Fatal(err)
	}
	unit, issued, err := l.UnitOf(lost)
	if err != nil || issued != 2 {
		t.Fatalf("unit of %s: %d issued (%v), want 2", lost, issued, err)
	}
	repl := &PreparedJob{CID: "b-u0-replacement", Unit: unit, Signed: []byte{1}, Listing: []byte{2}}
	declared, err := l.declareLost([]lostJob{{cid: lost, copy: repl}, {cid: other}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(declared, ",") != lost {
		t.Fatalf("declared %v, want only %s (the other has no timer)", declared, lost)
	}
	if st, _ := l.Known(lost); st != StateLost {
		t.Fatalf("%s is %s, want lost", lost, st)
	}
	var copyNo int
	var state string
	if err := l.db.QueryRow(`SELECT copy, state FROM jobs WHERE cid = ?`, repl.CID).Scan(&copyNo, &state); err != nil || copyNo != 2 || state != StatePrepared {
		t.Fatalf("replacement: copy %d, %s (%v); want copy 2, prepared", copyNo, state, err)
	}
	if _, issued, err = l.UnitOf(repl.CID); err != nil || issued != 2 {
		t.Fatalf("unit after the loss: %d issued (%v), want 2: the lost job left out", issued, err)
	}
	again, err := l.declareLost([]lostJob{{cid: lost, copy: &PreparedJob{CID: "b-u0-again", Unit: unit, Signed: []byte{1}, Listing: []byte{2}}}}, t0)
	if err != nil || len(again) != 0 {
		t.Fatalf("declared again: %v %v, want nothing", again, err)
	}
	if st, _ := l.Known("b-u0-again"); st != "" {
		t.Fatalf("a second replacement was recorded (%s)", st)
	}
}

// TestLostQueriesUseIndexes: the loss queries look jobs up by key or
// unit, never walking a table that grows with the ledger.
func TestLostQueriesUseIndexes(t *testing.T) {
	l, _ := openTestLedger(t)
	fillLedger(t, l, "b", 50, 2)
	for name, c := range map[string]struct {
		q    string
		args []any
	}{
		"mark unservable":  {qMarkUnservable, []any{1, "[]", "a", "b"}},
		"unservable since": {qUnservableSince, []any{"[]", "a", "b"}},
		"clear unservable": {qClearUnservable, []any{"[]"}},
		"units to reissue": {qUnitsToReissue, []any{"[]", "valid"}},
		"declare lost":     {qDeclareLost, []any{"lost", "x", "a", "b"}},
		"next copy":        {qNextCopy, []any{1}},
	} {
		checkPlan(t, l, name, c.q, c.args)
	}
}
