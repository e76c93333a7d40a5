package replica

import "slices"

// PassOnTargets is whom a node hands a job's new state on to at once
// (pool.syncNow), given its view of the job's r nearest live nodes,
// nearest first: the others when self is the closest, the closest when
// self is another of the r, all r when self is none of them. It is pure;
// the nodes and the simulator both step it.
func PassOnTargets[ID comparable](self ID, view []ID) []ID {
	switch i := slices.Index(view, self); {
	case i == 0:
		return view[1:]
	case i > 0:
		return view[:1]
	}
	return view
}
