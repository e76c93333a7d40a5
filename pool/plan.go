package pool

import (
	"slices"

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

// HandOnTo returns the newcomers this node hands a job on to. newcomers
// are the nodes that just entered its view; view is the live nodes
// nearest the job in its view, closest first, newcomers included (r plus
// the newcomers suffice). It hands the job on to the newcomers now among
// the job's r closest when it is the closest of the others — the node
// that republished and listed the job until now — so each job moves once,
// from the one node that surely holds it, and only jobs whose r closest a
// newcomer entered move. A node that knew fewer than r others before the
// newcomers (known) is itself joining: it did not know the jobs'
// neighbourhoods, so it hands nothing on (its republish round places its
// jobs) rather than resend every job it holds. It is pure.
func HandOnTo(self peer.ID, newcomers, view []peer.ID, known, r int) []peer.ID {
	if known < r {
		return nil
	}
	var to []peer.ID
	holder := false // the first of the others seen, and it is self
	for i, p := range view {
		switch {
		case slices.Contains(newcomers, p):
			if i < r && p != self {
				to = append(to, p)
			}
		case !holder && p != self:
			return nil // another node held the job before them
		default:
			holder = true
		}
	}
	if !holder {
		return nil
	}
	return to
}
