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
	fast = w.rankPass(ctx, w.d.NewProber())
	probe := w.d.NewProber()
	return fast, func(pos keyspace.Pos) int { return w.rank(ctx, pos, probe) }
}
