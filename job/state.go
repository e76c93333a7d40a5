package job

import (
	"bytes"
	"cmp"
	"fmt"
)

// Phase is where a job is in its life. Phases only move forward, except a
// claim that lapses or is released, which returns the job to Ready (a
// tombstone of that claim, which still merges above it).
type Phase uint8

// Phases. Finished and Collected merge above every ready or claimed state;
// ready and claimed states merge by claim version (see Compare).
// TempClaimed is a node's local state during the claim protocol; it is
// never replicated and never merged.
const (
	Ready       Phase = 0
	TempClaimed Phase = 1
	Claimed     Phase = 2
	Finished    Phase = 3
	Collected   Phase = 4
)

func (p Phase) String() string {
	switch p {
	case Ready:
		return "ready"
	case TempClaimed:
		return "temp-claimed"
	case Claimed:
		return "claimed"
	case Finished:
		return "finished"
	case Collected:
		return "collected"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// MaxClientIDLen bounds State.Client.
const MaxClientIDLen = 64

// MaxResultRefLen bounds State.Result.
const MaxResultRefLen = 64

// State is one replica's state of a job. Which fields are set depends on
// the phase:
//
//	Ready:     nothing (never claimed), or Client and Start of the claim
//	           that ended (a tombstone: the claim lapsed or was released)
//	Claimed:   Client, Start (claim granted, ms), Deadline (Start + T_finish, ms)
//	Finished:  Client (who computed it), At (result received, ms), Result (digest)
//	Collected: At (collection, ms)
//
// Times are Unix milliseconds. A claim is identified by its version
// (Start, Client); a tombstone remembers the version it ended, so a replica
// that saw the claim end and one that saw only the claim agree which comes
// later, whenever each ran its expiry.
type State struct {
	_        struct{} `cbor:",toarray"`
	Phase    Phase
	Client   []byte
	Start    int64
	Deadline int64
	At       int64
	Result   []byte
}

// IsTombstone reports whether s is a Ready state that remembers the claim
// it ended.
func (s State) IsTombstone() bool { return s.Phase == Ready && (len(s.Client) != 0 || s.Start != 0) }

// Validate checks that a replicated state is well formed for its phase.
func (s State) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s state: "+format, append([]any{ErrMalformed, s.Phase}, args...)...)
	}
	if len(s.Client) > MaxClientIDLen || len(s.Result) > MaxResultRefLen {
		return bad("client id of %d bytes, result reference of %d", len(s.Client), len(s.Result))
	}
	switch s.Phase {
	case Ready:
		if s.Deadline != 0 || s.At != 0 || len(s.Result) != 0 {
			return bad("fields set")
		}
		// Either nothing (never claimed) or a tombstone: both the client
		// and the start of the claim that ended.
		if (len(s.Client) == 0) != (s.Start == 0) || s.Start < 0 {
			return bad("want no claim, or the client and start of the claim that ended")
		}
	case Claimed:
		if len(s.Client) == 0 || s.Start <= 0 || s.Deadline <= s.Start || s.At != 0 || len(s.Result) != 0 {
			return bad("want client, start < deadline and nothing else")
		}
	case Finished:
		if len(s.Client) == 0 || s.At <= 0 || len(s.Result) == 0 || s.Start != 0 || s.Deadline != 0 {
			return bad("want client, time and result reference")
		}
	case Collected:
		if s.At <= 0 || len(s.Client) != 0 || len(s.Result) != 0 || s.Start != 0 || s.Deadline != 0 {
			return bad("want the collection time only")
		}
	default:
		return bad("not a replicated phase")
	}
	return nil
}

// class is the first key of the order: every phase of a claim's life
// before a result (ready, temp-claimed, claimed) shares class 0, ordered
// by claim version; later phases keep their own number.
func class(p Phase) int {
	switch p {
	case Ready, TempClaimed, Claimed:
		return 0
	}
	return int(p)
}

// ended ranks the phases of class 0 for the same claim version: the live
// claim, then a temporary one (never merged; placed for totality), then
// its end (the Ready tombstone).
func ended(p Phase) int {
	switch p {
	case Claimed:
		return 0
	case TempClaimed:
		return 1
	}
	return 2
}

// Compare orders states totally; Merge keeps the greater. The order:
//
//  1. finished and collected are above every ready or claimed state, and
//     collected above finished;
//  2. ready and claimed states are ordered by claim version: the later
//     Start is greater (a job re-claimed after a lapse carries the new
//     claim), then the client ID bytewise; plain Ready{} (Start 0) is the
//     bottom;
//  3. for the same version (Start, Client), the Ready tombstone is greater
//     than the claim it ended, and among claims the earlier Deadline is
//     greater, so a release (deadline moved to now) spreads;
//  4. finished and collected: the earlier At is greater: the first result
//     (first collection) stands, whichever node is closest;
//  5. remaining ties: the client ID, then the result reference, bytewise,
//     then the times, so only identical states compare equal.
//
// The client ID comes before the tombstone rule in 2–3 so that Expire is
// monotone: two claims at the same Start keep their order once either has
// lapsed. Compare depends only on the two states, so the merge is a join.
func Compare(a, b State) int {
	if c := cmp.Compare(class(a.Phase), class(b.Phase)); c != 0 {
		return c
	}
	switch class(a.Phase) {
	case 0:
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		if c := bytes.Compare(a.Client, b.Client); c != 0 {
			return c
		}
		if c := cmp.Compare(ended(a.Phase), ended(b.Phase)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Deadline, a.Deadline); c != 0 {
			return c
		}
	case int(Finished), int(Collected):
		if c := cmp.Compare(b.At, a.At); c != 0 {
			return c
		}
	}
	// Total tie-break on every field, so equal-comparing states are equal.
	if c := cmp.Compare(a.Phase, b.Phase); c != 0 {
		return c
	}
	if c := bytes.Compare(a.Client, b.Client); c != 0 {
		return c
	}
	if c := bytes.Compare(a.Result, b.Result); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Deadline, a.Deadline); c != 0 {
		return c
	}
	return cmp.Compare(b.At, a.At)
}

// Merge is the join of two replica states: the greater by Compare. It is
// commutative, associative and idempotent, so replicas converge whatever
// order they exchange states in. Expire commutes with it
// (Merge(Expire(a, t), Expire(b, t)) equals Expire(Merge(a, b), t)), so
// replicas converge whenever each applies expiry. Nodes merge states
// unexpired (Receive) and judge lapses only in what they read (Lapse, which
// commutes with Merge too), each on its own clock.
func Merge(a, b State) State {
	if Compare(a, b) >= 0 {
		return a
	}
	return b
}

// Expire applies time to a state at now (Unix ms): a claim whose deadline
// has passed lapses, and the job is ready again, as a tombstone that
// remembers the claim it ended (Ready with that claim's Client and Start).
// It never changes any other state. Expire is inflationary (the result
// never compares below its input) and monotone, so it commutes with Merge
// and the time a replica runs it does not change what replicas converge to.
func Expire(s State, now int64) State {
	if s.Phase == Claimed && now >= s.Deadline {
		return State{Phase: Ready, Client: s.Client, Start: s.Start}
	}
	return s
}

// Lapse is Expire as a node judges it on its own clock, with thesis
// 3.2.4's T_skew rule: a claim lapses once now (the node's clock, ms) is
// skew ms past its deadline, and at once when its client released it
// (claim.Release moved its deadline before Start + tFinish, the deadline
// every confirmed claim gets; tFinish is the job's T_finish in ms). Other
// states are returned as they are. Like Expire, Lapse is inflationary and
// monotone, so it commutes with Merge. Nodes keep and send states
// unexpired and apply Lapse only to what they read: a claim's end is
// never a fact one node tells another, but the claim's own deadline judged
// by each node on its own clock, so a clock that jumps ahead (and back)
// ends no claim anywhere else, nor for good.
func Lapse(s State, now, tFinish, skew int64) State {
	if s.Phase != Claimed {
		return s
	}
	if s.Deadline < s.Start+tFinish {
		return Expire(s, s.Deadline) // released
	}
	return Expire(s, now-skew)
}

// Receive is the state a node keeps when in arrives while it holds held
// (both unexpired): their join, except that a tombstone of the very claim
// the node holds stays out while that claim is live by Lapse on the
// node's own clock (now, tFinish, skew as for Lapse). A tombstone carries
// no deadline; it is only its sender's word that the claim ended, and a
// sender whose clock jumped ahead (or that lies) says so early. Honest
// nodes send claims unexpired, so the tombstones kept out are those of
// nodes running older code or lying; the node's join with every other
// state, and so the replicas' convergence, is unchanged.
func Receive(held, in State, now, tFinish, skew int64) State {
	if in.IsTombstone() && held.Phase == Claimed && held.Start == in.Start && bytes.Equal(held.Client, in.Client) &&
		Lapse(held, now, tFinish, skew).Phase == Claimed {
		return held
	}
	return Merge(held, in)
}

// Equal reports whether two states are identical.
func Equal(a, b State) bool { return Compare(a, b) == 0 }
