package claim

// Faults is f, how many of a job's r replicas may be faulty — crashed,
// slow, denying every claim, granting everyone, forging — while claims
// keep exactly one winner and every job stays claimable: the largest f
// with r ≥ 3f + 1 (f = 1 at r = 5, f = 2 at r = 7, none below r = 4).
func Faults(r int) int {
	if r < 1 {
		return 0
	}
	return (r - 1) / 3
}

// Quorum is q, how many of a job's r replicas must grant a claim and
// accept its confirm for the claim to be won: ⌊(r+f)/2⌋ + 1. Two quorums
// then share 2q − r > f replicas, so at least one honest one, which
// accepts one client's confirm at a time; and q ≤ r − f, so f faulty
// replicas cannot block a claim. Small networks (r of 1 to 3) need a
// majority and tolerate no fault.
func Quorum(r int) int {
	if r < 1 {
		return 1
	}
	return (r+Faults(r))/2 + 1
}

// ReceiptsNeeded is how many distinct certified nodes' signed store
// receipts make a job submitted at replication r: r − f (4 of 5). Up to f
// of a job's replicas may be faulty — one that drops jobs may sign nothing
// — so demanding all r would let one of them block every submission of
// its jobs; r − f ≥ 2f + 1 signers hold at least f + 1 honest copies, and
// honest holders republish the job to its r closest. The project
// (project.ReceiptsNeeded) and the simulator use this one rule.
func ReceiptsNeeded(r int) int { return r - Faults(r) }

// NearExtra is how far beyond a job's r closest a confirming node looks
// for the nodes whose replies count: a replier counts when it is among the
// r + NearExtra nearest to the job in the confirming node's own view, and
// the quorum asked is Quorum(min(r, nodes in that view)). Views differ by
// a few nodes (a join not seen yet, a death not noticed yet); a forger
// cannot place made-up repliers farther out. Nodes (claimnet) and the
// simulator use this one rule.
const NearExtra = 3
