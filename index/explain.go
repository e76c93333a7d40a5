package index

import "slices"

// Note is one decline an index node took for an entry: the client that
// declined it, why (the client's word: a wire.SkipReason's value, never
// acted on) and when (ms on the node's clock).
type Note struct {
	Client string
	Reason uint8
	At     int64
}

// MaxNotes bounds the notes an entry keeps (wire.MaxExplainNotes).
const MaxNotes = 16

// Decline ends the quarantine of the entry of job under keyword, which
// client, served it, will not take, and records the decline with its
// reason at now. It reports whether the entry exists; the notes go with
// the entry, so they are bounded by the entries held times MaxNotes.
func (t *Table) Decline(keyword string, jobKey []byte, client string, reason uint8, now int64) bool {
	b := t.bucket(keyword, false)
	if b == nil {
		return false
	}
	e, ok := b.byJob[string(jobKey)]
	if !ok {
		return false
	}
	e.Held = 0
	e.Declines++
	notes := e.Notes[max(0, len(e.Notes)-(MaxNotes-1)):]
	e.Notes = append(slices.Clip(notes), Note{Client: client, Reason: reason, At: now}) // a new array: copies served keep theirs
	return true
}

// MaxQueried bounds the keywords whose queries a Table counts: past it,
// the least recently queried is forgotten.
const MaxQueried = 4096

// Queried reports how many clients' queries for keyword the table
// answered (Select) since it was made, and when the latest was (ms); ok
// is false when none is remembered.
func (t *Table) Queried(keyword string) (n int, last int64, ok bool) {
	q, ok := t.queried.kw[keyword]
	if !ok {
		return 0, 0, false
	}
	return q.n, q.last, true
}

// queryLog counts queries per keyword, for at most MaxQueried keywords.
type queryLog struct {
	kw map[string]queried
}

type queried struct {
	n    int
	last int64 // ms
}

func (l *queryLog) add(keyword string, now int64) {
	if l.kw == nil {
		l.kw = map[string]queried{}
	}
	q, ok := l.kw[keyword]
	if !ok && len(l.kw) >= MaxQueried {
		l.evict()
	}
	l.kw[keyword] = queried{n: q.n + 1, last: max(q.last, now)}
}

// evict forgets the least recently queried keyword.
func (l *queryLog) evict() {
	oldest, at := "", int64(0)
	for k, q := range l.kw {
		if oldest == "" || q.last < at || (q.last == at && k < oldest) {
			oldest, at = k, q.last
		}
	}
	delete(l.kw, oldest)
}
