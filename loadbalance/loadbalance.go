// Package loadbalance is the pure core of U.P.'s load balancing: a node's
// load figure, the decision whether two nodes should even out by one moving,
// the split point that tells the lighter node where to land, and the
// Controller, the state machine every node runs around them (when to probe,
// how to react to a load piggy-backed on a reply, the cool-downs, the
// measured request rate, the grind-bits gate of a move). No I/O, no clock,
// no randomness of its own: the nodes' shell (package balancenet) and the
// simulator (testnet/sim) step the same Controller with their own time and
// seeded sources.
//
// The algorithm is the second one of Karger and Ruhl as adopted by the
// thesis (sections 2.3.1, 3.4 and 4.2.1): every node now and then probes the
// node closest to a random key; if the two loads differ by more than the
// fraction φ and by more than ΔL_trivial, and neither node has moved or
// taken over data recently, the lighter node leaves its position and
// rejoins inside the heavier node's region so that it takes about half of
// the heavier node's items. The wildcard index (index entries of one keyword
// spread over a 16-bit region) is what makes this work for hot keywords:
// the nodes that join the region split its entries between them.
//
// Following the thesis' future-work section (5.3) the load also counts the
// recent request rate, so that the nodes serving a keyword that has run out
// of entries are not all moved away, and it is divided by the node's
// declared capacity, so that heterogeneous nodes carry proportional loads.
//
// Times are Unix milliseconds passed in by the caller.
package loadbalance

import (
	"fmt"
	"math"
)

// Default parameter values; see Params.
const (
	DefaultPhi     = 0.4
	DefaultTrivial = 100.0
	DefaultWIndex  = 1.0
	DefaultWJob    = 3.0
	// DefaultWRate weighs one request per second (averaged over the last few
	// minutes) like ten index entries: a node answering 10 req/s carries as
	// much extra load as ΔL_trivial = 100 entries, so a node serving an
	// exhausted but still popular keyword keeps a load that stops it from
	// being moved away, while ordinary background traffic (well below 1
	// req/s) hardly shifts the figure.
	DefaultWRate = 10.0
	// DefaultCoolDown is 21 minutes: the 16-minute index entry expiry (the
	// time until rewritten entries have found their new closest node) plus
	// 5 minutes for the routing tables to settle (thesis 4.2.1).
	DefaultCoolDown int64 = 21 * 60 * 1000
)

// Params are the tuning knobs of the load balancer. A zero field takes its
// default (see ApplyDefaults); NoCoolDown and NoMoveInterval turn those
// checks off.
type Params struct {
	// Phi is φ: the lighter load must be below Phi times the heavier one.
	Phi float64
	// Trivial is ΔL_trivial: the loads must differ by more than this.
	// Default 100; below zero, any difference does.
	Trivial float64
	// WIndex, WJob and WRate weigh an index entry, a job the node is the
	// closest node for, and one request per second.
	WIndex, WJob, WRate float64
	// CoolDown is how long (ms) after a node last moved or changed its data
	// it sits out of load balancing, as either party. Default
	// DefaultCoolDown (21 min); not negative.
	CoolDown int64
	// MinMoveInterval is the least time (ms) between two moves of one node
	// (one account); it bounds how often a node may be told to move.
	// Default CoolDown; not negative.
	MinMoveInterval int64
	// NoCoolDown turns the cool-down check off (CoolDown is then unused
	// by it): tests, and runs that measure balancing without it.
	NoCoolDown bool
	// NoMoveInterval turns the move-interval check off (MinMoveInterval is
	// then unused by it).
	NoMoveInterval bool
}

// ApplyDefaults sets every zero field of p to its default; MinMoveInterval
// defaults to CoolDown (after CoolDown's own default).
func (p *Params) ApplyDefaults() {
	if p.Phi == 0 {
		p.Phi = DefaultPhi
	}
	if p.Trivial == 0 {
		p.Trivial = DefaultTrivial
	}
	if p.WIndex == 0 {
		p.WIndex = DefaultWIndex
	}
	if p.WJob == 0 {
		p.WJob = DefaultWJob
	}
	if p.WRate == 0 {
		p.WRate = DefaultWRate
	}
	if p.CoolDown == 0 {
		p.CoolDown = DefaultCoolDown
	}
	if p.MinMoveInterval == 0 {
		p.MinMoveInterval = p.CoolDown
	}
}

// Load is what a node reports about itself when probed.
type Load struct {
	// IndexEntries is the number of index entries the node holds.
	IndexEntries int
	// ClosestJobs is the number of jobs for which the node is the closest
	// node (not the replicas it holds for others: a newcomer could not take
	// those off it).
	ClosestJobs int
	// Rate is the recent rate of requests the node served, per second.
	Rate float64
	// Capacity is the node's declared relative capacity; zero, negative or
	// NaN count as 1.
	Capacity float64
	// LastMove is when (ms) the node last moved; 0 means never.
	LastMove int64
	// LastChange is when (ms) the node last received data in a hand-over or
	// moved; 0 means never.
	LastChange int64
}

// Value returns the load figure (n_index·WIndex + n_job·WJob +
// rate·WRate) / capacity, with p's zero fields defaulted.
func (l Load) Value(p Params) float64 {
	p.ApplyDefaults()
	c := l.Capacity
	if !(c > 0) {
		c = 1
	}
	return (float64(l.IndexEntries)*p.WIndex + float64(l.ClosestJobs)*p.WJob + l.Rate*p.WRate) / c
}

// Verdict is the outcome of a probe: nobody moves, the probing node moves,
// or the probed node moves.
type Verdict int

// The verdicts.
const (
	None Verdict = iota
	SelfMoves
	OtherMoves
)

// String returns "none", "self-moves" or "other-moves".
func (v Verdict) String() string {
	switch v {
	case None:
		return "none"
	case SelfMoves:
		return "self-moves"
	case OtherMoves:
		return "other-moves"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Decision is Decide's answer: the verdict, a human-readable reason, and
// the two load figures compared.
type Decision struct {
	Verdict     Verdict
	Reason      string
	Self, Other float64
}

// recent reports whether last (0 = never) lies less than window ms before
// now. A last in the future counts as recent.
func recent(last, now, window int64) bool {
	return last != 0 && now-last < window
}

// Decide decides what follows from self probing other at now (ms): the
// lighter node moves if its load is below φ times the heavier one's, the
// difference exceeds ΔL_trivial, neither node has moved or changed its data
// within CoolDown, and the lighter node has not moved within
// MinMoveInterval. Otherwise the verdict is None and Reason says why. The
// checks run in that order; p's zero fields are defaulted.
func Decide(self, other Load, now int64, p Params) Decision {
	p.ApplyDefaults()
	ls, lo := self.Value(p), other.Value(p)
	d := Decision{Verdict: None, Self: ls, Other: lo}
	valid := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
	if !valid(ls) || !valid(lo) {
		d.Reason = fmt.Sprintf("invalid load (self %v, other %v)", ls, lo)
		return d
	}
	if ls == 0 && lo == 0 {
		d.Reason = "both loads are zero"
		return d
	}
	verdict, light, heavy, mover, who := SelfMoves, ls, lo, self, "self"
	if lo < ls {
		verdict, light, heavy, mover, who = OtherMoves, lo, ls, other, "other"
	}
	if !(light < p.Phi*heavy) {
		d.Reason = fmt.Sprintf("balanced: lighter load %.1f is not below phi·heavier = %.1f", light, p.Phi*heavy)
		return d
	}
	if diff := heavy - light; !(diff > p.Trivial) {
		d.Reason = fmt.Sprintf("trivial: difference %.1f is not above %.1f", diff, p.Trivial)
		return d
	}
	for _, n := range []struct {
		name string
		l    Load
	}{{"self", self}, {"other", other}} {
		if !p.NoCoolDown && (recent(n.l.LastMove, now, p.CoolDown) || recent(n.l.LastChange, now, p.CoolDown)) {
			d.Reason = fmt.Sprintf("cool-down: %s moved or changed data less than %d ms ago", n.name, p.CoolDown)
			return d
		}
	}
	if !p.NoMoveInterval && recent(mover.LastMove, now, p.MinMoveInterval) {
		d.Reason = fmt.Sprintf("move interval: %s (the lighter) last moved %d ms ago, less than %d", who, now-mover.LastMove, p.MinMoveInterval)
		return d
	}
	d.Verdict = verdict
	d.Reason = fmt.Sprintf("%s moves: lighter %.1f < phi·heavier %.1f and difference %.1f > %.1f",
		who, light, p.Phi*heavy, heavy-light, p.Trivial)
	return d
}
