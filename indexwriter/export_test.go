package indexwriter

import (
	"context"

	"github.com/up-pool/up/dht/keyspace"
)

// ClosestTests returns the writer's test of closeness without a prober,
// and the reference it stands for (rank, through NearestLocal).
func (w *Writer) ClosestTests() (fast, ref func(keyspace.Pos) int) {
	return w.closestFunc(), func(pos keyspace.Pos) int { return w.rank(context.Background(), pos, nil) }
}

// ProbedRankTests returns a full round's rank (one pass, probing) and
// the reference it stands for (rank through NearestLocal), each with a
// prober of its own.
func (w *Writer) ProbedRankTests(ctx context.Context) (fast, ref func(keyspace.Pos) int) {
	fast = w.rankPass(ctx, w.d.NewProber(), nil)
	probe := w.d.NewProber()
	return fast, func(pos keyspace.Pos) int { return w.rank(ctx, pos, probe) }
}

// Unwatch forgets the peers and index nodes the writer's rounds probe
// (roundState.ahead, targets): the control of the watch's test, a writer
// that would notice no dead writer ahead of it before its next full visit.
func (w *Writer) Unwatch() {
	w.busy.Lock()
	defer w.busy.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.rounds.ahead)
	clear(w.rounds.targets)
}

// QueuedForTests is how many items the due queue holds.
func (w *Writer) QueuedForTests() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rounds.due.Len()
}
