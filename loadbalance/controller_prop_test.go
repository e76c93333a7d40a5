package loadbalance

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
)

// propRun steps one controller with a seeded stream of random events and
// checks, after every step, what must hold whatever the events:
//
//   - a NeedCounts answer comes alone and leaves the controller as it was;
//   - every wait lies in [ProbeMin, ProbeMax], and an off controller never
//     schedules or probes on its own nor reacts;
//   - reactions: one in flight at a time, none within the cool-down of the
//     last, each counted;
//   - a move only through the gate: a split that is OK, no deeper than
//     MaxGrindBits, to the region answered, and never within
//     MinMoveInterval of the last move;
//   - the published load: the counts a probe gave, a finite rate of at least 0,
//     the configured capacity, the last move and change.
type propRun struct {
	t    *testing.T
	rng  *rand.Rand
	c    *Controller[int]
	cfg  ControllerConfig
	now  int64
	step int

	lastMove, lastChange int64
	reacting             bool
	reactedAt            int64
	reactions, moves     int
}

func (r *propRun) randomLoad() Load {
	l := Load{IndexEntries: r.rng.IntN(2000), ClosestJobs: r.rng.IntN(100), Rate: r.rng.Float64() * 20}
	if r.rng.IntN(4) == 0 {
		l.LastMove = r.now - r.rng.Int64N(30*minute)
	}
	if r.rng.IntN(4) == 0 {
		l.LastChange = r.now - r.rng.Int64N(30*minute)
	}
	return l
}

func (r *propRun) randomEvent() Event[int] {
	ev := Event[int]{Kind: EventKind(1 + r.rng.IntN(int(ReactionEnded))), Peer: r.rng.IntN(8), Nudge: r.rng.IntN(2) == 0}
	ev.Load = r.randomLoad()
	if r.rng.IntN(3) > 0 {
		ev.Counts = &Counts{IndexEntries: r.rng.IntN(2000), ClosestJobs: r.rng.IntN(100), Served: float64(r.rng.IntN(100000))}
	}
	ev.Split = SplitAnswer{OK: r.rng.IntN(5) > 0, Bits: r.rng.IntN(40) - 2}
	ev.Split.Prefix = keyspace.Region{}.RandomPoint(r.rng)
	ev.Decision = Decision{Verdict: Verdict(r.rng.IntN(3))}
	return ev
}

// check steps ev and checks the answer against the invariants.
func (r *propRun) check(ev Event[int]) {
	t := r.t
	before := *r.c
	acts := r.c.Step(r.now, ev)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d at %d, event %+v: "+format, append([]any{r.step, r.now, ev}, args...)...)
	}
	for i, a := range acts {
		switch a.Kind {
		case NeedCounts:
			if len(acts) != 1 || *r.c != before || ev.Counts != nil {
				fail("NeedCounts with %d actions, or the controller changed", len(acts))
			}
		case ScheduleProbe:
			if r.cfg.Off || a.After < r.cfg.ProbeMin || a.After > r.cfg.ProbeMax {
				fail("wait %d (off %v)", a.After, r.cfg.Off)
			}
		case ProbeNear:
			if r.cfg.Off && ev.Kind != ProbeNow {
				fail("probe while off")
			}
		case AskLoad:
			r.checkAskLoad(ev, a, fail)
		case MoveTo:
			s := ev.Split
			if !s.OK || s.Bits > r.cfg.MaxGrindBits || a.Target != keyspace.NewRegion(s.Prefix, s.Bits) ||
				(!r.cfg.Params.NoMoveInterval && recent(r.lastMove, r.now, r.cfg.Params.MinMoveInterval)) || ev.Decision.Verdict != SelfMoves {
				fail("move %d: %+v", i, a)
			}
		case Publish:
			r.checkPublish(ev, a.Load, fail)
		}
	}
	switch ev.Kind {
	case Moved:
		r.lastMove, r.lastChange = r.now, r.now
		r.moves++
	case HandedOver:
		r.lastChange = r.now
	case ReactionEnded:
		r.reacting = false
	}
	if r.c.Moves() != r.moves || r.c.Reactions() != r.reactions {
		fail("%d moves and %d reactions, want %d and %d", r.c.Moves(), r.c.Reactions(), r.moves, r.reactions)
	}
}

func (r *propRun) checkAskLoad(ev Event[int], a Action[int], fail func(string, ...any)) {
	if !a.Reaction {
		if ev.Kind != Nudged || a.Peer != ev.Peer || a.Nudge {
			fail("ask load %+v", a)
		}
		return
	}
	cool := !r.cfg.Params.NoCoolDown && r.reactedAt != 0 && r.now-r.reactedAt < r.cfg.Params.CoolDown
	if ev.Kind != Observed || r.cfg.Off || r.reacting || cool || a.Decision.Verdict == None || !a.Nudge {
		fail("reaction %+v (in flight %v, last at %d)", a, r.reacting, r.reactedAt)
	}
	r.reacting, r.reactedAt = true, r.now
	r.reactions++
}

func (r *propRun) checkPublish(ev Event[int], l Load, fail func(string, ...any)) {
	if ev.Kind == LoadAsked && (l.IndexEntries != ev.Counts.IndexEntries || l.ClosestJobs != ev.Counts.ClosestJobs) {
		fail("published %+v for counts %+v", l, *ev.Counts)
	}
	if !(l.Rate >= 0) || math.IsInf(l.Rate, 0) || l.Capacity != r.cfg.Capacity || l.LastMove != r.lastMove || l.LastChange != r.lastChange {
		fail("published %+v (last move %d, change %d)", l, r.lastMove, r.lastChange)
	}
}

// TestControllerProperties runs random event streams on controllers on
// and off, with and without cool-downs.
func TestControllerProperties(t *testing.T) {
	for seed := range uint64(40) {
		rng := newRNG(100 + seed)
		cfg := ControllerConfig{Off: seed%4 == 3, ProbeMin: rng.Int64N(10 * minute), MaxGrindBits: 1 + rng.IntN(30),
			Params: Params{CoolDown: rng.Int64N(20 * minute), MinMoveInterval: rng.Int64N(20 * minute)}}
		cfg.ProbeMax = cfg.ProbeMin + rng.Int64N(10*minute)
		if seed%5 == 4 {
			cfg.Params.NoCoolDown, cfg.Capacity = true, 2.5
		}
		c, err := NewController[int](cfg, newRNG(seed))
		if err != nil {
			t.Fatal(err)
		}
		r := &propRun{t: t, rng: rng, c: c, cfg: c.Config(), now: rng.Int64N(minute)}
		for r.step = range 3000 {
			if rng.IntN(3) == 0 {
				r.now += rng.Int64N(1500) // within ReportAge and RateSample, often
			} else {
				r.now += rng.Int64N(2 * minute)
			}
			if rng.IntN(50) == 0 {
				r.now -= rng.Int64N(minute) // a clock stepped back
			}
			ev := r.randomEvent()
			r.check(ev)
			if ev.Counts == nil && r.step%2 == 0 {
				ev.Counts = &Counts{Served: float64(r.step)}
				r.check(ev) // the same event, counted
			}
		}
	}
}

// TestControllerNeedCountsIsPure: stepping an event without counts, then
// with them, gives what stepping it with them at once gives.
func TestControllerNeedCountsIsPure(t *testing.T) {
	for seed := range uint64(20) {
		a, _ := NewController[int](testCfg(), newRNG(seed))
		b, _ := NewController[int](testCfg(), newRNG(seed))
		r := &propRun{rng: newRNG(200 + seed)}
		for step := range 2000 {
			r.now += r.rng.Int64N(minute)
			ev := r.randomEvent()
			if ev.Counts == nil {
				ev.Counts = &Counts{Served: float64(step * 3)}
			}
			bare := ev
			bare.Counts = nil
			got := a.Step(r.now, bare)
			if len(got) == 1 && got[0].Kind == NeedCounts {
				got = a.Step(r.now, ev)
			}
			want := b.Step(r.now, ev)
			sa, sb := *a, *b
			sa.rnd, sb.rnd = nil, nil
			if len(got) != len(want) || sa != sb {
				t.Fatalf("seed %d step %d, %+v: %+v against %+v", seed, step, ev, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("seed %d step %d, %+v: %+v against %+v", seed, step, ev, got, want)
				}
			}
		}
	}
}
