package index

import (
	"fmt"
	"testing"
)

// TestExplainBookkeeping: an entry counts its serves and its declines,
// keeps the latest MaxNotes declines, ends its quarantine on a decline,
// and starts afresh when written anew after a withdrawal; the table counts
// clients' queries per keyword, also of keywords it holds nothing under.
func TestExplainBookkeeping(t *testing.T) {
	tb := NewTable(Config{LMin: 1, LFactor: 1e-12})
	tb.Put(entry("k", 0, 0), t0)
	if got := tb.Select(MustParse("k"), "k", 1, t0, newRNG(1)); len(got) != 1 {
		t.Fatalf("served %d entries, want 1", len(got))
	}
	if got := tb.Select(MustParse("k"), "k", 1, t0+1, newRNG(1)); len(got) != 0 {
		t.Fatalf("a quarantined entry was served again")
	}
	for i := range MaxNotes + 2 {
		if !tb.Decline("k", jobKey(0), fmt.Sprintf("c%d", i), uint8(i%5), t0+int64(2+i)) {
			t.Fatal("declined entry not found")
		}
	}
	if tb.Decline("k", jobKey(9), "c", 1, t0) || tb.Decline("other", jobKey(0), "c", 1, t0) {
		t.Fatal("a decline of an entry not held was taken")
	}
	e, _ := tb.Get("k", jobKey(0))
	if e.ServedN != 1 || e.Declines != MaxNotes+2 || len(e.Notes) != MaxNotes || e.Notes[0].Client != "c2" || e.Held != 0 {
		t.Fatalf("entry served %d, %d declines, %d notes from %q, held until %d; want 1, %d, %d from c2, not held",
			e.ServedN, e.Declines, len(e.Notes), e.Notes[0].Client, e.Held, MaxNotes+2, MaxNotes)
	}
	if n, last, ok := tb.Queried("k"); !ok || n != 2 || last != t0+1 {
		t.Fatalf("keyword k: %d queries, last at %d (%v); want 2 at %d", n, last, ok, t0+1)
	}
	tb.Select(MustParse("none"), "none", 1, t0+5, newRNG(1))
	if n, _, ok := tb.Queried("none"); !ok || n != 1 {
		t.Fatalf("a query of a keyword with no entry counted %d (%v), want 1", n, ok)
	}
	if _, _, ok := tb.Queried("never"); ok {
		t.Fatal("a keyword never queried is reported queried")
	}
	tb.Withdraw("k", jobKey(0), "", t0+100)
	tb.Put(entry("k", 0, 0), t0+200)
	if e, _ := tb.Get("k", jobKey(0)); e.ServedN != 0 || e.Declines != 0 || e.Notes != nil {
		t.Fatalf("entry written anew keeps %d serves, %d declines", e.ServedN, e.Declines)
	}
}

// TestQueriedBounded: the table counts the queries of at most MaxQueried
// keywords, forgetting the least recently queried.
func TestQueriedBounded(t *testing.T) {
	tb := NewTable(Config{})
	for i := range MaxQueried + 10 {
		tb.Select(MustParse("k"), fmt.Sprintf("kw%d", i), 1, t0+int64(i), newRNG(1))
	}
	if len(tb.queried.kw) != MaxQueried {
		t.Fatalf("%d keywords remembered, want %d", len(tb.queried.kw), MaxQueried)
	}
	if _, _, ok := tb.Queried("kw0"); ok {
		t.Fatal("the least recently queried keyword is still remembered")
	}
	if _, _, ok := tb.Queried(fmt.Sprintf("kw%d", MaxQueried+9)); !ok {
		t.Fatal("the latest keyword is forgotten")
	}
}
