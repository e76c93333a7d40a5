package pool

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
)

// Holding is what a node knows of one job it holds, for planning a round.
type Holding struct {
	Key         string
	State       job.State // unexpired, as it is sent (Pool.Apply)
	Responsible int64     // last time (ms) the node was among the job's r closest
}

// Decision is what a round does with one job.
type Decision int

// Decisions of a republish round.
const (
	Keep      Decision = iota // among the r closest, not the closest: wait for the closest's sync
	Republish                 // the closest: sync the state to the others of the r closest
	Drop                      // not among the r closest for longer than the replica expiry
	Linger                    // not among the r closest, still within the replica expiry
)

// Decide chooses what a node does with one job in a round, given the live
// r closest nodes to the job in its view (closest first), itself, the
// time (ms) and the replica expiry (ms). It is pure.
func Decide(self peer.ID, liveClosest []peer.ID, h Holding, now, replicaExpiry int64) Decision {
	for i, p := range liveClosest {
		if p == self {
			if i == 0 {
				return Republish
			}
			return Keep
		}
	}
	if now-h.Responsible > replicaExpiry {
		return Drop
	}
	return Linger
}
