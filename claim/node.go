package claim

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/up-pool/up/job"
)

// Temp is a node's temporary claim on a job: held for Client until Until
// (ms). It is never replicated.
type Temp struct {
	Client []byte
	Until  int64
}

// Decision is a node's answer to a claim request, and the temporary claim
// to record when it grants.
type Decision struct {
	Kind   Kind
	Temp   *Temp
	Reason string // why it denied
	Busy   bool   // denied only for another client's temporary claim (Statement.Busy)
}

// ReasonOtherCopy is the reason of a denial to a client that holds another
// copy of the job's unit on the denying node.
const ReasonOtherCopy = "client holds another copy of this unit"

// Decide answers a client's claim request at now (ms). held says whether
// the node holds the job; st is its replicated state with expiry applied;
// temp its current temporary claim (nil when none); otherCopy whether the
// node holds another copy of the job's unit that this client claimed,
// finished or had collected (a redundant copy must come from another
// client: the node refuses this one); tClaim the temporary claim's life in
// ms.
func Decide(held bool, st job.State, temp *Temp, client []byte, otherCopy bool, now, tClaim int64) Decision {
	if !held {
		return Decision{Kind: DontCare}
	}
	switch st.Phase {
	case job.Claimed:
		if bytes.Equal(st.Client, client) {
			return Decision{Kind: Granted} // already this client's
		}
		return Decision{Kind: Denied, Reason: "claimed by another client"}
	case job.Finished, job.Collected:
		return Decision{Kind: Denied, Reason: "job is " + st.Phase.String()}
	}
	if otherCopy {
		return Decision{Kind: Denied, Reason: ReasonOtherCopy}
	}
	if temp != nil && now < temp.Until && !bytes.Equal(temp.Client, client) {
		return Decision{Kind: Denied, Reason: "temporarily claimed by another client", Busy: true}
	}
	return Decision{Kind: Granted, Temp: &Temp{Client: client, Until: now + tClaim}}
}

// Frees reports whether a temporary claim that ended without a confirm
// (its client released it, or it lapsed) leaves the job free at this
// node: the job is still ready, no confirm made it a claim. The job's
// index entries, held back from other clients since one was served them,
// are then to be served again at once: a failed claim attempt must not
// idle a ready job for the whole quarantine. st is the replicated state
// with expiry applied.
func Frees(held bool, st job.State) bool {
	return held && st.Phase == job.Ready
}

// CanJudge reports whether a node can tell which nodes are among a job's
// closest, to check a confirm's replies: its routing table knows at least
// r other nodes, or it has been up warmup ms (in a network of r nodes or
// fewer its table is all there is). A node restarted a moment ago, its
// table still filling, cannot: refusing a confirm for a reply from a node
// it does not know yet would fail claims it has no reason to fail. upMS is
// how long the node has been up, in ms.
func CanJudge(known, r int, upMS, warmupMS int64) bool {
	return known >= r || upMS >= warmupMS
}

// DefaultTSkew is how far, in ms, two clocks may disagree (20 min, thesis
// 3.2.4's T_skew): every honest clock within ±MaxClockOffset of true time,
// so any two within twice that. A confirm's claim start, read from the
// client's clock, must lie within it of the confirming node's clock.
const DefaultTSkew = 2 * MaxClockOffset

// MaxClockOffset is how far, in ms, an honest machine's clock may be off
// true time (10 min: volunteer PCs' clocks are often minutes off). A clock
// further off is a fault, counted against f like a lying node.
const MaxClockOffset = int64(10 * 60 * 1000)

// Reply is a verified reply inside a confirm: who said what, and when by
// the replying node's own clock (informational: never compared with
// another clock).
type Reply struct {
	Node string
	Kind Kind
	At   int64
}

// Confirm errors.
var (
	ErrNoTempClaim = errors.New("no temporary claim for this client")
	ErrBadConfirm  = errors.New("confirm refused")
)

// CheckConfirm decides whether a client's confirm makes its claim
// permanent at this node, and returns the claimed state to apply. The
// replies must already be signature-checked, bound to the nodes they name,
// and be for this job and client. Rules: this node's own temporary claim is
// the client's and has not lapsed on this node's clock (or the job is
// already this client's); the job is still ready; the replies come from
// distinct nodes, all that `near` accepts as among the job's closest, and
// at least `need` of them granted (the quorum, Quorum of the r closest or
// of all that exist); others may have denied or not cared — up to f
// faulty replicas must not block a claim. No other node's reply time is compared with
// this clock: each node judges only its own temporary claim, so a grant
// counts here only while this node's temporary claim stands, whatever the
// clocks of the others say. start is the claim's start, chosen by the
// client: it orders the claim in the replicated state and must lie within
// tSkew of now (clocks may disagree by up to T_skew); the claim lasts
// tFinish ms from it.
func CheckConfirm(st job.State, temp *Temp, client []byte, replies []Reply, need int, near func(node string) bool,
	start, tFinish, now, tSkew int64) (job.State, error) {
	claimed := job.State{Phase: job.Claimed, Client: client, Start: start, Deadline: start + tFinish}
	reclaim := false
	if st.Phase == job.Claimed && bytes.Equal(st.Client, client) {
		if st.Deadline != st.Start+tFinish {
			// Released (its deadline moved to the release) but not yet
			// lapsed: confirming it again would hand the client a claim
			// that ends at once, while the job goes to another.
			return job.State{}, fmt.Errorf("%w: the client released this claim", ErrBadConfirm)
		}
		if start <= st.Start {
			return st, nil // confirmed before (or an older attempt's confirm): idempotent
		}
		// A later attempt of the same client (an earlier one's release
		// missed this node, which granted because the job is the
		// client's): checked as a new claim, except that no temporary
		// claim is needed; it supersedes the old claim in every merge.
		reclaim = true
	} else if st.Phase != job.Ready {
		return job.State{}, fmt.Errorf("%w: job is %s", ErrBadConfirm, st.Phase)
	}
	// A claim must order after the tombstone of the claim that ended last
	// (job.Compare: Start, then Client), or the merge keeps the tombstone
	// and the claim silently does not exist.
	if start < st.Start || (start == st.Start && bytes.Compare(client, st.Client) <= 0) {
		return job.State{}, fmt.Errorf("%w: claim start %d not after the ended claim's %d", ErrBadConfirm, start, st.Start)
	}
	if !reclaim && (temp == nil || !bytes.Equal(temp.Client, client) || now >= temp.Until) {
		return job.State{}, ErrNoTempClaim
	}
	if start < now-tSkew || start > now+tSkew {
		return job.State{}, fmt.Errorf("%w: claim start %d ms off this node's clock (at most %d)", ErrBadConfirm, start-now, tSkew)
	}
	// Only grants from nodes this node places among the job's closest
	// count, as in a certificate (CheckClaimProof); a reply from another
	// node is left out, not a reason to refuse: under churn, views differ
	// by a node that just left or came back, and refusing the whole
	// confirm for it failed claims a quorum of counted grants carries.
	seen := map[string]bool{}
	grants, far := 0, 0
	for _, r := range replies {
		switch {
		case seen[r.Node]:
			return job.State{}, fmt.Errorf("%w: two replies from node %x", ErrBadConfirm, r.Node)
		case !near(r.Node):
			far++
		case r.Kind == Granted:
			grants++
		}
		seen[r.Node] = true
	}
	if grants < need || grants == 0 {
		return job.State{}, fmt.Errorf("%w: %d of %d replies granted by the job's closest nodes (%d from nodes not among them), need %d",
			ErrBadConfirm, grants, len(seen), far, need)
	}
	return claimed, nil
}

// Release is the state that releases a permanent claim at now: the same
// claim with its deadline moved to now, which wins every merge with the
// old claim and lapses at once into a tombstone (job.Expire, job.Lapse)
// that keeps the job ready. A claim past its deadline but still live here
// (within T_skew of it) has its deadline moved to just before the old
// one: moved to now it would be later, lose the merge, and live on.
func Release(st job.State, client []byte, now int64) (job.State, bool) {
	if st.Phase != job.Claimed || !bytes.Equal(st.Client, client) {
		return st, false
	}
	rel := st
	rel.Deadline = max(min(now, st.Deadline-1), rel.Start+1)
	return rel, true
}
