package loadbalance

import (
	"fmt"

	"github.com/up-pool/up/dht/keyspace"
)

// EventKind says what happened; the Event fields it reads are named with it.
type EventKind uint8

// The events a Controller is stepped with.
const (
	// Start (re)starts the probe schedule: the first ScheduleProbe.
	Start EventKind = iota + 1
	// ProbeDue: the wait of the last ScheduleProbe has passed.
	ProbeDue
	// ProbeNow asks for one probe now, also when balancing is off (by
	// hand, or a harness's balancing round).
	ProbeNow
	// LoadAsked: another node asks this node's load (its probe). Counts.
	LoadAsked
	// ReportDue: a reply is about to carry this node's load. Counts, when
	// the last report is older than ReportAge (else NeedCounts).
	ReportDue
	// Observed: a reply from Peer carried Peer's Load. Counts as for
	// ReportDue: the node compares its reported load.
	Observed
	// Nudged: Peer, much heavier, asks this node to balance with it.
	Nudged
	// LoadAnswered: Peer answered this node's probe with its Load. Counts
	// (this node's, now); Nudge: whether to nudge Peer if Peer should move.
	LoadAnswered
	// SplitAnswered: Peer, the heavy node, answered where this node should
	// land. Split, and the Decision the AskSplit carried.
	SplitAnswered
	// Moved: this node moved to its new position.
	Moved
	// HandedOver: this node handed items to a newcomer beside it.
	HandedOver
	// ReactionEnded: the exchange an AskLoad with Reaction set started is
	// over, however it ended.
	ReactionEnded
)

// Event is what a Controller is stepped with: Kind and the fields it reads.
type Event[ID comparable] struct {
	Kind     EventKind
	Peer     ID
	Load     Load    // the peer's load
	Counts   *Counts // this node's counts now; nil: not counted
	Nudge    bool
	Split    SplitAnswer
	Decision Decision
}

// ActionKind says what the caller is to do; the Action fields it reads
// are named with it.
type ActionKind uint8

// The actions a Controller answers with.
const (
	// NeedCounts: step the same event again with Counts. It comes alone,
	// and the controller changed nothing.
	NeedCounts ActionKind = iota + 1
	// ScheduleProbe: step ProbeDue After ms from now.
	ScheduleProbe
	// ProbeNear: find the node nearest Key (the routing table's, no
	// lookup) and ask its load, nudging it if it should move; no node
	// besides this one: the exchange ends there.
	ProbeNear
	// AskLoad: ask Peer's load and step LoadAnswered with it (and Nudge).
	// Reaction: step ReactionEnded once the exchange is over.
	AskLoad
	// Publish: Load is this node's load, the answer to LoadAsked or the
	// report ReportDue asked for.
	Publish
	// SendNudge: ask Peer to balance with this node (Peer should move).
	SendNudge
	// AskSplit: ask Peer where to land, and step SplitAnswered with the
	// answer and Decision.
	AskSplit
	// MoveTo: move into Target, next to Peer, and step Moved once there.
	MoveTo
	// Settled: the exchange with Peer ends with Decision, nothing to send.
	Settled
)

// Action is what a Controller asks of its caller: Kind and the fields it
// names. Decision is the exchange's decision so far.
type Action[ID comparable] struct {
	Kind     ActionKind
	Peer     ID
	Key      keyspace.Pos
	After    int64
	Nudge    bool
	Reaction bool
	Target   keyspace.Region
	Load     Load
	Decision Decision
}

// Step applies ev at now (ms) and returns what the caller is to do, in
// order; nil when nothing.
func (c *Controller[ID]) Step(now int64, ev Event[ID]) []Action[ID] {
	switch ev.Kind {
	case Start:
		if c.cfg.Off {
			return nil
		}
		return []Action[ID]{c.schedule()}
	case ProbeDue:
		if c.cfg.Off {
			return nil
		}
		return []Action[ID]{c.schedule(), c.probeNear()}
	case ProbeNow:
		return []Action[ID]{c.probeNear()}
	case LoadAsked:
		if ev.Counts == nil {
			return needCounts[ID]()
		}
		return []Action[ID]{{Kind: Publish, Load: c.load(now, *ev.Counts)}}
	case ReportDue:
		l, ok := c.reported(now, ev.Counts)
		if !ok {
			return needCounts[ID]()
		}
		return []Action[ID]{{Kind: Publish, Load: l}}
	case Observed:
		return c.observe(now, ev)
	case Nudged:
		return []Action[ID]{{Kind: AskLoad, Peer: ev.Peer}}
	case LoadAnswered:
		return c.answered(now, ev)
	case SplitAnswered:
		return []Action[ID]{c.splitAnswered(now, ev)}
	case Moved:
		c.lastMove, c.lastChange = now, now
		c.moves++
		c.hasReport, c.hasSample = false, false // a new instance counts its requests afresh
	case HandedOver:
		c.lastChange = now
		c.hasReport = false
	case ReactionEnded:
		c.reacting = false
	}
	return nil
}

func needCounts[ID comparable]() []Action[ID] { return []Action[ID]{{Kind: NeedCounts}} }

// schedule draws the wait before the next probe, uniform in [ProbeMin,
// ProbeMax].
func (c *Controller[ID]) schedule() Action[ID] {
	lo, hi := c.cfg.ProbeMin, c.cfg.ProbeMax
	wait := lo
	if hi > lo {
		wait = lo + c.rnd.Int64N(hi-lo+1)
	}
	return Action[ID]{Kind: ScheduleProbe, After: wait}
}

// probeNear draws a uniform random key to probe near: four words, big
// endian, as keyspace.Region.RandomPoint draws them.
func (c *Controller[ID]) probeNear() Action[ID] {
	var key keyspace.Pos
	for i := range 4 {
		v := c.rnd.Uint64()
		for j := range 8 {
			key[i*8+j] = byte(v >> (56 - 8*j))
		}
	}
	return Action[ID]{Kind: ProbeNear, Key: key, Nudge: true}
}

// load is the node's load now from counts, sampling the served counter
// when RateSample has passed since the last sample (a counter that went
// back, as after a move, gives no rate).
func (c *Controller[ID]) load(now int64, counts Counts) Load {
	dt := now - c.sampled
	due := !c.hasSample || dt >= max(c.cfg.RateSample, 1)
	if c.hasSample && due && counts.Served >= c.served {
		c.rate = (counts.Served - c.served) * 1000 / float64(dt)
	}
	if due {
		c.served, c.sampled, c.hasSample = counts.Served, now, true
	}
	return Load{IndexEntries: counts.IndexEntries, ClosestJobs: counts.ClosestJobs, Rate: c.rate,
		Capacity: c.cfg.Capacity, LastMove: c.lastMove, LastChange: c.lastChange}
}

// reported is the load the node piggy-backs: the last report while it is
// younger than ReportAge, else one computed from counts; ok is false when
// a new one is due and counts is nil.
func (c *Controller[ID]) reported(now int64, counts *Counts) (l Load, ok bool) {
	if age := now - c.reportAt; c.hasReport && age >= 0 && age < c.cfg.ReportAge {
		return c.report, true
	}
	if counts == nil {
		return Load{}, false
	}
	c.report, c.reportAt, c.hasReport = c.load(now, *counts), now, true
	return c.report, true
}

// observe reacts to a load a reply carried: when the controller listens
// and Decide says one of the two should move, the node balances with the
// peer (and nudges it if it is the one to move).
func (c *Controller[ID]) observe(now int64, ev Event[ID]) []Action[ID] {
	if !c.Listening(now) {
		return nil
	}
	self, ok := c.reported(now, ev.Counts)
	if !ok {
		return needCounts[ID]()
	}
	d := Decide(self, ev.Load, now, c.cfg.Params)
	if d.Verdict == None {
		return nil
	}
	c.reacting, c.reactedAt = true, now
	c.reactions++
	return []Action[ID]{{Kind: AskLoad, Peer: ev.Peer, Nudge: true, Reaction: true, Decision: d}}
}

// answered decides on a probe's answer: the lighter node moves; when that
// is the peer, it is nudged (if the exchange nudges), else this node asks
// the peer where to land.
func (c *Controller[ID]) answered(now int64, ev Event[ID]) []Action[ID] {
	if ev.Counts == nil {
		return needCounts[ID]()
	}
	d := Decide(c.load(now, *ev.Counts), ev.Load, now, c.cfg.Params)
	kind := Settled
	switch {
	case d.Verdict == OtherMoves && ev.Nudge:
		kind = SendNudge
	case d.Verdict == SelfMoves:
		kind = AskSplit
	}
	return []Action[ID]{{Kind: kind, Peer: ev.Peer, Decision: d}}
}

// splitAnswered is the gate before a move: the heavy node's load must
// split, no deeper than MaxGrindBits, and this node must not have moved
// since it decided (another exchange may have moved it meanwhile).
func (c *Controller[ID]) splitAnswered(now int64, ev Event[ID]) Action[ID] {
	d, s := ev.Decision, ev.Split
	none := func(reason string) Action[ID] {
		d.Verdict, d.Reason = None, reason
		return Action[ID]{Kind: Settled, Peer: ev.Peer, Decision: d}
	}
	switch {
	case d.Verdict != SelfMoves:
		return Action[ID]{Kind: Settled, Peer: ev.Peer, Decision: d}
	case !s.OK || s.Bits < 0:
		return none("the heavy node's load does not split")
	case s.Bits > c.cfg.MaxGrindBits:
		return none(fmt.Sprintf("the heavy node splits at %d bits, deeper than %d to grind", s.Bits, c.cfg.MaxGrindBits))
	case !c.cfg.Params.NoMoveInterval && recent(c.lastMove, now, c.cfg.Params.MinMoveInterval):
		return none(fmt.Sprintf("move interval: self moved %d ms ago, while the exchange ran", now-c.lastMove))
	}
	return Action[ID]{Kind: MoveTo, Peer: ev.Peer, Target: keyspace.NewRegion(s.Prefix, s.Bits), Decision: d}
}
