package loadbalance

import (
	"fmt"
	"math"

	"github.com/up-pool/up/dht/keyspace"
)

// Defaults of ControllerConfig; see there.
const (
	DefaultProbeMin     int64 = 20 * 60 * 1000
	DefaultProbeMax     int64 = 60 * 60 * 1000
	DefaultMaxGrindBits       = 28
	DefaultReportAge    int64 = 1000
	DefaultRateSample   int64 = 1000
)

// ControllerConfig configures a Controller. A zero field takes its default
// (ApplyDefaults); times are in milliseconds.
type ControllerConfig struct {
	// Params are the load weights, φ, ΔL_trivial and cool-downs of Decide.
	Params Params
	// Off turns automatic balancing off: no probes of the node's own and
	// no reactions to piggy-backed loads. The node still answers probes,
	// follows a nudge and probes when stepped with ProbeNow.
	Off bool
	// ProbeMin and ProbeMax bound the wait before each probe, drawn
	// uniformly in between. Both zero: 20 and 60 min (thesis 4.2.1).
	ProbeMin, ProbeMax int64
	// Capacity is the node's declared capacity, relative. Default 1.
	Capacity float64
	// MaxGrindBits is the longest prefix the node grinds an identity for:
	// a heavy node whose split lies deeper is left as it is. Default 28.
	MaxGrindBits int
	// ReportAge is how long the load piggy-backed on replies is reused
	// before it is computed again (counting the jobs a node is the closest
	// to walks its pool). Default 1 s.
	ReportAge int64
	// RateSample is the least time between two samples of the served
	// counter the request rate is measured over. Default 1 s.
	RateSample int64
	// LastMove and LastChange are when the node last moved, and last moved
	// or took over data, before the controller started (0: never).
	LastMove, LastChange int64
}

// ApplyDefaults sets the zero fields of c (and of c.Params) to their
// defaults.
func (c *ControllerConfig) ApplyDefaults() {
	c.Params.ApplyDefaults()
	if c.ProbeMin == 0 && c.ProbeMax == 0 {
		c.ProbeMin, c.ProbeMax = DefaultProbeMin, DefaultProbeMax
	}
	if c.Capacity == 0 {
		c.Capacity = 1
	}
	if c.MaxGrindBits == 0 {
		c.MaxGrindBits = DefaultMaxGrindBits
	}
	if c.ReportAge == 0 {
		c.ReportAge = DefaultReportAge
	}
	if c.RateSample == 0 {
		c.RateSample = DefaultRateSample
	}
}

// Validate reports the first bad field of c, naming it, in one line.
func (c *ControllerConfig) Validate() error {
	if err := c.Params.Validate(); err != nil {
		return fmt.Errorf("load balance config: Params.%w", err)
	}
	switch {
	case c.ProbeMin < 0:
		return fmt.Errorf("load balance config: ProbeMin %d ms is negative", c.ProbeMin)
	case c.ProbeMax < c.ProbeMin:
		return fmt.Errorf("load balance config: ProbeMax %d ms is below ProbeMin %d ms", c.ProbeMax, c.ProbeMin)
	case !(c.Capacity > 0) || math.IsInf(c.Capacity, 0):
		return fmt.Errorf("load balance config: Capacity %v is not a positive number", c.Capacity)
	case c.MaxGrindBits < 1 || c.MaxGrindBits > keyspace.Bits:
		return fmt.Errorf("load balance config: MaxGrindBits %d is not in 1..%d", c.MaxGrindBits, keyspace.Bits)
	case c.ReportAge < 0:
		return fmt.Errorf("load balance config: ReportAge %d ms is negative", c.ReportAge)
	case c.RateSample < 0:
		return fmt.Errorf("load balance config: RateSample %d ms is negative", c.RateSample)
	}
	return nil
}

// Validate reports the first bad field of p (after ApplyDefaults), naming
// it: φ must lie in (0, 1], the weights must be finite and not negative,
// ΔL_trivial must be a number, the cool-down and the move interval must
// not be negative (NoCoolDown and NoMoveInterval turn them off).
func (p Params) Validate() error {
	switch {
	case !(p.Phi > 0 && p.Phi <= 1):
		return fmt.Errorf("Phi %v is not in (0, 1]", p.Phi)
	case math.IsNaN(p.Trivial):
		return fmt.Errorf("Trivial is NaN")
	case p.CoolDown < 0:
		return fmt.Errorf("CoolDown %d ms is negative (NoCoolDown turns the check off)", p.CoolDown)
	case p.MinMoveInterval < 0:
		return fmt.Errorf("MinMoveInterval %d ms is negative (NoMoveInterval turns the check off)", p.MinMoveInterval)
	}
	for _, w := range []struct {
		name string
		v    float64
	}{{"WIndex", p.WIndex}, {"WJob", p.WJob}, {"WRate", p.WRate}} {
		if !(w.v >= 0) || math.IsInf(w.v, 0) {
			return fmt.Errorf("%s %v is not a finite weight of at least 0", w.name, w.v)
		}
	}
	return nil
}

// Rand is the randomness a Controller draws its waits and probe keys from:
// a seeded source its caller owns (a *math/rand/v2.Rand is one), so that a
// run replays.
type Rand interface {
	Int64N(n int64) int64
	Uint64() uint64
}

// Counts are what a node holds and has served now: the part of its load
// the controller cannot keep itself.
type Counts struct {
	IndexEntries int
	ClosestJobs  int
	// Served counts the requests the node has served so far; the
	// controller measures the rate between two samples of it. It may
	// start again from zero after a move.
	Served float64
}

// SplitAnswer is a heavy node's answer to where a newcomer should land: the
// region of the first Bits bits of Prefix, or nowhere (OK false).
type SplitAnswer struct {
	OK     bool
	Prefix keyspace.Pos
	Bits   int
}

// Controller is one node's balancing controller (thesis 3.4, 4.2.1): when
// to probe, what a probe's answer and a load piggy-backed on a reply lead
// to, the grind-bits gate of a move, the cool-downs after moves and
// reactions, the measured request rate and the load the node publishes.
// It is stepped with events and the time, and answers with the actions
// its caller carries out (raft's Step shape); it does no I/O, reads no
// clock and draws randomness only from the Rand it was given. ID is how
// the caller names other nodes. Not safe for concurrent use.
type Controller[ID comparable] struct {
	cfg                  ControllerConfig
	rnd                  Rand
	lastMove, lastChange int64
	moves, reactions     int

	rate      float64 // requests per second at the last sample
	served    float64 // the served counter at the last sample
	sampled   int64   // when it was sampled
	hasSample bool

	report    Load // the load piggy-backed on replies, computed at reportAt
	reportAt  int64
	hasReport bool

	reacting  bool  // a reaction's exchange is in flight
	reactedAt int64 // when the last reaction started (0: never)
}

// NewController returns a controller for cfg (defaults applied, then
// validated) that draws from rnd.
func NewController[ID comparable](cfg ControllerConfig, rnd Rand) (*Controller[ID], error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rnd == nil {
		return nil, fmt.Errorf("load balance controller: no randomness source")
	}
	return &Controller[ID]{cfg: cfg, rnd: rnd, lastMove: cfg.LastMove, lastChange: cfg.LastChange}, nil
}

// Config is the controller's configuration, defaults applied.
func (c *Controller[ID]) Config() ControllerConfig { return c.cfg }

// Moves is how many times the node moved (Moved events).
func (c *Controller[ID]) Moves() int { return c.moves }

// Reactions is how many exchanges piggy-backed loads started.
func (c *Controller[ID]) Reactions() int { return c.reactions }

// Listening reports whether a load observed at now could start a
// reaction: balancing is on, no reaction is in flight and none started
// within the cool-down. A caller for whom the other's load is costly to
// obtain asks this first; Step(Observed) checks it again.
func (c *Controller[ID]) Listening(now int64) bool {
	cooling := !c.cfg.Params.NoCoolDown && c.reactedAt != 0 && now-c.reactedAt < c.cfg.Params.CoolDown
	return !c.cfg.Off && !c.reacting && !cooling
}
