package claimclient

import (
	"time"

	"github.com/up-pool/up/claim"
)

// laterStart is the latest ended claim's start the grants named so far
// (after), with one more grant's (named) taken in — unless named lies
// more than claim.MaxClockOffset ahead of this client's clock (now, ms).
// No honest client's claim starts that far ahead, and a claim started
// after it would be refused by every honest confirming node (its start
// off their clocks by more than T_skew): one lying replica would make the
// job unclaimable. Honest nodes that hold such a tombstone refuse this
// client's confirm; at most f of them can, since honest ones hold only
// honest starts.
func laterStart(after, named, now int64) int64 {
	if named > now+claim.MaxClockOffset {
		return after
	}
	return max(after, named)
}

// denyWait is how long a client denied by a node waits before it asks
// the next one (going on past a denial, since up to f nodes may lie). A
// denial for another client's live attempt (busy) waits for that attempt
// to end: about one round trip (took, as long as the denied request took)
// for each of the left asks and one for the confirm, at most 2 s; the
// other client, already on its way to the next node, then wins or fails
// alone instead of both racing for the rest of the quorum, where with one
// more denial (one faulty replica) both would lose. A liar saying busy
// only delays the client by that. Any other denial waits one round trip
// (at most 1 s): the node may hold a stale claim, and a client that holds
// the job is on its way too.
func denyWait(took time.Duration, busy bool, left int) time.Duration {
	rtt := max(took, 20*time.Millisecond)
	if !busy {
		return min(rtt, time.Second)
	}
	return min(rtt*time.Duration(max(left, 0)+1), 2*time.Second)
}
