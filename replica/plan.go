package replica

import (
	"slices"

	"github.com/up-pool/up/job"
)

// Timing of the rules' execution, one source for the nodes (pool) and the
// simulator, in ms (the package has no clock).
const (
	// HandOnGatherMS is how long a node waits after a newcomer entered its
	// routing table before handing it its jobs (HandOnTo), so a burst of
	// joins goes out in one batch per newcomer.
	HandOnGatherMS = 100
	// HandOnGraceMS is how long a node that handed a job on keeps listing
	// it, so the newcomer's listing is up first.
	HandOnGraceMS = 60_000
	// RepairGatherMS is how long a node waits after a node left its
	// routing table before repairing the jobs whose r closest it left
	// (RepairTo), so a burst of departures goes out in one batch per
	// target.
	RepairGatherMS = 100
	// ResyncIntervalMS is the least time between two resyncs of one job
	// by one node (pool.Config.ResyncInterval's default): a resync on a
	// client's repair request or a denial's doubt syncs the job with its
	// r closest at once instead of at the next republish round.
	ResyncIntervalMS = 10_000
	// SyncAttempts is how many times a node sends a sync (a round's,
	// a placement's, a result's pass-on) whose target fails, the first
	// included; each retry is re-planned on the new view (Replan).
	SyncAttempts = 4
	// MaxFirstNodes is how many nodes a project sends a job through (its
	// first node, then the job's next closest not tried yet) before it
	// gives the submission up: a first node that fails, or whose answer
	// carries fewer than claim.ReceiptsNeeded signed store receipts, is
	// followed by the next. The project (project.MaxFirstNodes) and the
	// simulator use this one bound.
	MaxFirstNodes = 3
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
func Decide[ID comparable](self ID, liveClosest []ID, h Holding, now, replicaExpiry int64) Decision {
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
func HandOnTo[ID comparable](self ID, newcomers, view []ID, known, r int) []ID {
	if known < r {
		return nil
	}
	var to []ID
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

// RepairTo returns the nodes this node gives a job to because nodes left:
// gone are the nodes that just left its view; view is the nodes nearest
// the job as they were before (the gone included where they stood, then
// the live ones), closest first — r plus the gone suffice. When some gone
// node was among the job's r closest and this node is now the closest
// live one (the node that republishes and lists the job), it gives the job
// to the live nodes that entered the r closest in the gone nodes' place,
// so a job keeps r live replicas between republish rounds instead of
// dwindling with every departure until the next. Any other node gives
// nothing: each job is repaired once, by the one node that surely holds
// it. It is pure.
func RepairTo[ID comparable](self ID, gone, view []ID, r int) []ID {
	lost := false
	live := 0
	var to []ID
	for i, p := range view {
		if slices.Contains(gone, p) {
			lost = lost || i < r
			continue
		}
		if live == 0 && p != self {
			return nil // another node is the closest live one: it repairs
		}
		if i >= r && live < r {
			to = append(to, p)
		}
		if live++; live >= r {
			break
		}
	}
	if !lost || live == 0 {
		return nil
	}
	return to
}

// RoundJob is one job as a republish round plans it: what the node knows
// of it, and the job's r nearest live nodes in the node's view, closest
// first (liveness is an input: the shell probes before it plans).
type RoundJob[ID comparable] struct {
	Holding
	View []ID
}

// RoundPlan is what a republish round does, decided before any message.
type RoundPlan[ID comparable] struct {
	Sync        map[ID][]string // the jobs to sync to each node
	Responsible []string        // jobs among whose r closest this node is: their Responsible becomes now
	Replicas    map[string][]ID // the other r − 1 of each job this node republishes
	Handed      map[string]bool // jobs handed on to their closest (not among the r closest here)
	Drop        []string        // jobs to delete once handed on
	Closest     int             // jobs this node republishes
}

// PlanRound plans a republish round (Decide for each job): the closest
// of a job's r syncs it to the other r − 1 (repairing and updating them),
// the others to the closest (so a closest that lost the job, or just
// became the closest, gets it); a node no longer among the r closest
// hands the job on to its closest, and drops it past the replica expiry
// (ms) once handed on. It is pure.
func PlanRound[ID comparable](self ID, jobs []RoundJob[ID], now, replicaExpiry int64) RoundPlan[ID] {
	pl := RoundPlan[ID]{Sync: map[ID][]string{}, Replicas: map[string][]ID{}, Handed: map[string]bool{}}
	for _, j := range jobs {
		switch d := Decide(self, j.View, j.Holding, now, replicaExpiry); d {
		case Republish:
			pl.Closest++
			pl.Responsible = append(pl.Responsible, j.Key)
			for _, t := range j.View[1:] {
				pl.Sync[t] = append(pl.Sync[t], j.Key)
			}
			pl.Replicas[j.Key] = j.View[1:]
		case Keep:
			pl.Responsible = append(pl.Responsible, j.Key)
			pl.Sync[j.View[0]] = append(pl.Sync[j.View[0]], j.Key)
		case Linger, Drop:
			if len(j.View) > 0 {
				pl.Sync[j.View[0]] = append(pl.Sync[j.View[0]], j.Key)
				pl.Handed[j.Key] = true
			}
			if d == Drop {
				pl.Drop = append(pl.Drop, j.Key)
			}
		}
	}
	return pl
}

// Replan is where a job goes after its sync to failed failed (failed is
// now marked dead), given the job's new view (closest first): to the
// other r − 1 when this node is now the closest; to the closest when this
// node is among the r and the closest is not failed; a job handed on, to
// its new closest; nowhere else. It is pure.
func Replan[ID comparable](self, failed ID, view []ID, handed bool) []ID {
	if !slices.Contains(view, self) {
		if handed && len(view) > 0 && view[0] != failed {
			return view[:1]
		}
		return nil
	}
	if view[0] == self {
		return view[1:]
	}
	if view[0] != failed {
		return view[:1]
	}
	return nil
}

// SkipSync reports whether a republish round skips syncing a job to its
// view: a collected job whose state (collected at At) this node synced to
// the same view (view, a hash of the view's nodes and their admissions;
// syncedView 0: never synced) in an earlier round, unless the round is a
// full one (pool/republish_skip.go says why nothing is lost). It is pure.
func SkipSync(st job.State, syncedAt int64, syncedView, view uint64, full bool) bool {
	return !full && st.Phase == job.Collected && syncedView != 0 && syncedView == view && syncedAt == st.At
}
