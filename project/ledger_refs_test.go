package project

import (
	"encoding/json"
	"fmt"
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

// TestRefsArgIsJSON: refsArg writes JSON that decodes to what it was
// given, for CIDs and for any string a test or an old ledger names a job
// by.
func TestRefsArgIsJSON(t *testing.T) {
	names := []string{"bafyreigh2akiscaildc", `q"uote`, `back\slash`, "tab\there", "nul\x00", "é ü 日本", "\xff\xfe", "<&>", ""}
	refs := make([]jobRef, len(names))
	extra := make([]int, len(names))
	for i, n := range names {
		refs[i] = jobRef{id: int64(i*7 + 1), cid: n}
		extra[i] = i - 3
	}
	for _, ex := range [][]int{nil, extra} {
		var got [][]any
		if err := json.Unmarshal([]byte(refsArg(refs, ex)), &got); err != nil {
			t.Fatalf("refsArg %q: %v", refsArg(refs, ex), err)
		}
		for i, r := range refs {
			want, _ := json.Marshal(r.cid) // invalid UTF-8 becomes U+FFFD, as encoding/json writes it
			var wantCID string
			_ = json.Unmarshal(want, &wantCID)
			if got[i][0] != float64(r.id) || got[i][1] != wantCID || (ex != nil && got[i][2] != float64(ex[i])) {
				t.Fatalf("element %d = %v, want [%d %q %v]", i, got[i], r.id, wantCID, ex)
			}
		}
	}
}
