package indexwriter

import (
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/pool"
)

// sweep is the state a job was in when its closest withdrew its entries
// at their points: its phase and its claim's start.
type sweep struct {
	phase job.Phase
	start int64
}

func sweepOf(st job.State) sweep { return sweep{phase: st.Phase, start: st.Start} }

// sweepOrphans plans, for a job this node is the closest of, whose state
// lists it nowhere and whose entries this node did not write (planJob
// says so: it took the listing over from a node that died, or it
// restarted and remembers no placement), a final withdrawal of the job's
// entry under each keyword its state rules out, at the entry's point
// (index.EntryPoint) — once per state. The node that wrote the entries
// while the job was listable is gone or has forgotten them, so without
// this they stayed listed until they expired, each serve sending a client
// to a claimed job (issue 24's failed claims under churn). An entry that
// is not there costs the index node a lookup in its table. The listing is
// decoded before w.mu is taken (the pool has its own lock).
func (w *Writer) sweepOrphans(h pool.Held, pl *plan) {
	k := string(h.Key)
	env, err := w.pool.Envelope(h.Key)
	if err != nil {
		return
	}
	_, l, err := job.DecodeListing(env.Listing)
	if err != nil {
		return
	}
	w.mu.Lock()
	done := w.swept[k] == sweepOf(h.State)
	w.swept[k] = sweepOf(h.State)
	w.mu.Unlock()
	if done {
		return
	}
	for _, kw := range append(l.Keywords[:len(l.Keywords):len(l.Keywords)], job.FinishedKeyword(h.Project)) {
		if index.RuledOut(h.State, kw, h.Project) {
			pl.blind = append(pl.blind, op{key: k, keyword: kw, final: true, place: l.Place})
		}
	}
}
