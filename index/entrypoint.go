package index

import "github.com/up-pool/up/dht/keyspace"

// EntryPoint is the point of region g (keyword kw's) where job jobKey's
// entry under kw is written: keyspace.Region.PointFor of the job and the
// keyword. Every writer of the job finds the same point, so a node that
// takes a job's listing over from one that died or restarted rewrites the
// entry at the index node that holds it — and the claim's final
// withdrawal reaches it — instead of placing a second entry beside an
// orphan that stays listed until it expires. The job keys of many jobs
// spread their entries over the region as uniformly as random points did.
func EntryPoint(g keyspace.Region, kw string, jobKey []byte) keyspace.Pos {
	seed := make([]byte, 0, len(jobKey)+1+len(kw))
	seed = append(append(append(seed, jobKey...), 0), kw...)
	return g.PointFor(seed)
}
