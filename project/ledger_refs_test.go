package project

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// lifecycleStates drives each unit's first job through acknowledgement,
// result and collected mark, and returns the ledger state of every job.
func lifecycleStates(t *testing.T, l *Ledger, units [][]string) map[string]string {
	t.Helper()
	now := time.Now()
	acks := map[string]int{}
	var all []string
	for _, u := range units {
		acks[u[0]] = 5
		all = append(all, u...)
	}
	if err := l.MarkSubmitted(acks, now); err != nil {
		t.Fatal(err)
	}
	done := recordPage(t, l, units, now)
	validateCollect(t, l, done, now)
	st, err := l.states(all)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestJobsFoundByIDOrCID: the hot paths find a job by the id the process
// noted when it recorded it, and by CID a job it did not note (recorded
// before the ledger was reopened); both end in the same states, and a
// collected job is forgotten.
func TestJobsFoundByIDOrCID(t *testing.T) {
	l, path := openTestLedger(t)
	before := fillLedger(t, l, "before", 10, 2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	after := fillLedger(t, l, "after", 10, 2)
	if len(l.known) != 20 {
		t.Fatalf("%d jobs known after recording 20, want 20", len(l.known))
	}
	for name, units := range map[string][][]string{"by CID": before, "by id": after} {
		st := lifecycleStates(t, l, units)
		for _, u := range units {
			if st[u[0]] != StateCollected || st[u[1]] != StatePrepared {
				t.Fatalf("%s: states %s %s, %s %s; want collected, prepared", name, u[0], st[u[0]], u[1], st[u[1]])
			}
		}
	}
	if len(l.known) != 10 {
		t.Fatalf("%d jobs known after 10 of 20 were collected, want 10", len(l.known))
	}
}

// TestWrongIDFindsNoJob: a job named by an id that is another job's
// (as a stale note would) is not found, and the other job is untouched:
// every statement checks the CID as well.
func TestWrongIDFindsNoJob(t *testing.T) {
	l, _ := openTestLedger(t)
	units := fillLedger(t, l, "b", 2, 1)
	a, b := units[0][0], units[1][0]
	l.mu.Lock()
	l.known[a] = l.known[b] // a's note names b's row
	l.mu.Unlock()
	if err := l.MarkSubmitted(map[string]int{a: 5}, time.Now()); err != nil {
		t.Fatal(err)
	}
	st, err := l.states([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if st[b] != StatePrepared {
		t.Fatalf("job %s is %s after acknowledging %s under its id, want prepared", b, st[b], a)
	}
	if _, ok := st[a]; ok {
		t.Fatalf("job %s found (%s) under another job's id", a, st[a])
	}
	// A collected mark and a queued unit under b's id leave b as it was.
	now := time.Now()
	if _, err := l.recordResults([]Result{{CID: b, Client: "w", ClientKey: make([]byte, 32), Output: []byte("ok"), At: now}}, now, false); err != nil {
		t.Fatal(err)
	}
	queued := func() (n int) {
		if err := l.db.QueryRow(`SELECT COUNT(*) FROM to_validate`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := l.db.Exec(`DELETE FROM to_validate`); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	id := l.known[a] // b's
	l.mu.Unlock()
	if err := l.MarkCollected([]string{a}, now); err != nil {
		t.Fatal(err)
	}
	tx, err := l.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.exec(tx, qQueueUnits, refsArg([]jobRef{{id: id, cid: a}})); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, err := l.states([]string{b}); err != nil || st[b] != StateHarvested {
		t.Fatalf("job %s is %s after a collected mark under its id, want harvested (%v)", b, st[b], err)
	}
	if n := queued(); n != 0 {
		t.Fatalf("%d units queued by a job named under another's id", n)
	}
}

// TestKnownBounded: Ledger.known never holds more than maxKnown jobs.
func TestKnownBounded(t *testing.T) {
	l, _ := openTestLedger(t)
	refs := make([]jobRef, maxKnown+100)
	for i := range refs {
		refs[i] = jobRef{id: int64(i + 1), cid: fmt.Sprint("c", i)}
	}
	l.noteKnown(refs)
	if n := len(l.known); n > maxKnown || n == 0 {
		t.Fatalf("%d jobs known after noting %d, want 1..%d", n, len(refs), maxKnown)
	}
}

// TestRefsArgIsJSON: refsArg writes a JSON object whose members, in
// order, are what it was given, for CIDs and for any string a test or an
// old ledger names a job by; a CID given twice is a member twice.
func TestRefsArgIsJSON(t *testing.T) {
	names := []string{"bafyreigh2akiscaildc", `q"uote`, `back\slash`, "tab\there", "nul\x00", "é ü 日本", "\xff\xfe", "<&>", "", "bafyreigh2akiscaildc"}
	refs := make([]jobRef, len(names))
	for i, n := range names {
		refs[i] = jobRef{id: int64(i*7 + 1), cid: n}
	}
	dec := json.NewDecoder(strings.NewReader(refsArg(refs)))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("refsArg %q: %v %v, want an object", refsArg(refs), tok, err)
	}
	for i, r := range refs {
		key, err := dec.Token()
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		val, err := dec.Token()
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		want, _ := json.Marshal(r.cid) // invalid UTF-8 becomes U+FFFD, as encoding/json writes it
		var wantCID string
		_ = json.Unmarshal(want, &wantCID)
		if key != wantCID || val != json.Number(fmt.Sprint(r.id)) {
			t.Fatalf("member %d = %q: %v, want %q: %d", i, key, val, wantCID, r.id)
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') || dec.More() {
		t.Fatalf("refsArg %q: %v %v after the members", refsArg(refs), tok, err)
	}
}
