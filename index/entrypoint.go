package index

import "github.com/up-pool/up/dht/keyspace"

// EntryPoint is the point of region g (keyword kw's) where the entry
// under kw of a job placed by placeKey (job.PlaceKey: its batch's place
// key, or its own key for a spec signed alone) is written:
// keyspace.Region.PointFor of the place key and the keyword. Every writer
// of the job finds the same point, so a node that takes a job's listing
// over from one that died or restarted rewrites the entry at the index
// node that holds it — and the claim's final withdrawal reaches it —
// instead of placing a second entry beside an orphan that stays listed
// until it expires.
//
// The entries of one submission batch share their point, so one index
// node holds them all and a query it answers serves a client several
// jobs of one place, which the client claims together (issue 23: with
// the point by job key a batch's entries lay over the region's nodes and
// a client's claim groups averaged under three jobs). Many batches spread
// their entries over the region as uniformly as random points did; one
// batch is at most job.MaxPlacedBatch entries at one node.
func EntryPoint(g keyspace.Region, kw string, placeKey []byte) keyspace.Pos {
	seed := make([]byte, 0, len(placeKey)+1+len(kw))
	seed = append(append(append(seed, placeKey...), 0), kw...)
	return g.PointFor(seed)
}
