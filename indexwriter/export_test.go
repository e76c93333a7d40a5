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
