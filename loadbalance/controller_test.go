package loadbalance

import (
	"math"
	"strings"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
)

// minute is one minute in ms.
const minute = int64(60 * 1000)

// testCfg is the tests' controller config: cool-downs of 10 min, probes
// every 20–60 min.
func testCfg() ControllerConfig {
	return ControllerConfig{Params: Params{CoolDown: 10 * minute, MinMoveInterval: 10 * minute}}
}

func newCtl(t *testing.T, cfg ControllerConfig, seed uint64) *Controller[string] {
	t.Helper()
	c, err := NewController[string](cfg, newRNG(seed))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// counts is a Counts value to step with.
func counts(entries, jobs int, served float64) *Counts {
	return &Counts{IndexEntries: entries, ClosestJobs: jobs, Served: served}
}

// one is the single action acts holds; the test fails otherwise.
func one(t *testing.T, acts []Action[string]) Action[string] {
	t.Helper()
	if len(acts) != 1 {
		t.Fatalf("actions %+v, want one", acts)
	}
	return acts[0]
}

func TestControllerConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		edit func(*ControllerConfig)
		want string // in the error; "" for none
	}{
		{func(*ControllerConfig) {}, ""},
		{func(c *ControllerConfig) { c.Params.Phi = 1.5 }, "Params.Phi 1.5 is not in (0, 1]"},
		{func(c *ControllerConfig) { c.Params.Phi = math.NaN() }, "Params.Phi NaN"},
		{func(c *ControllerConfig) { c.Params.WRate = -1 }, "Params.WRate -1"},
		{func(c *ControllerConfig) { c.Params.WJob = math.Inf(1) }, "Params.WJob +Inf"},
		{func(c *ControllerConfig) { c.Params.Trivial = math.NaN() }, "Params.Trivial is NaN"},
		{func(c *ControllerConfig) {
			c.Params.Trivial = -1
			c.Params.NoCoolDown, c.Params.NoMoveInterval = true, true
		}, ""},
		{func(c *ControllerConfig) { c.Params.CoolDown = -1 }, "Params.CoolDown -1 ms is negative (NoCoolDown turns the check off)"},
		{func(c *ControllerConfig) { c.Params.MinMoveInterval = -1 }, "Params.MinMoveInterval -1 ms is negative (NoMoveInterval"},
		{func(c *ControllerConfig) { c.ProbeMin = -1; c.ProbeMax = 5 }, "ProbeMin -1 ms is negative"},
		{func(c *ControllerConfig) { c.ProbeMin, c.ProbeMax = 10, 5 }, "ProbeMax 5 ms is below ProbeMin 10 ms"},
		{func(c *ControllerConfig) { c.ProbeMin, c.ProbeMax = 0, 5 }, ""},
		{func(c *ControllerConfig) { c.Capacity = -2 }, "Capacity -2"},
		{func(c *ControllerConfig) { c.Capacity = math.NaN() }, "Capacity NaN"},
		{func(c *ControllerConfig) { c.MaxGrindBits = 257 }, "MaxGrindBits 257 is not in 1..256"},
		{func(c *ControllerConfig) { c.MaxGrindBits = -1 }, "MaxGrindBits -1"},
		{func(c *ControllerConfig) { c.ReportAge = -1 }, "ReportAge -1 ms"},
		{func(c *ControllerConfig) { c.RateSample = -1 }, "RateSample -1 ms"},
	} {
		cfg := testCfg()
		tc.edit(&cfg)
		_, err := NewController[string](cfg, newRNG(1))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one containing %q", cfg, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("error %q is more than one line", err)
		}
	}
	if _, err := NewController[string](testCfg(), nil); err == nil {
		t.Error("no randomness source accepted")
	}
	c := newCtl(t, ControllerConfig{}, 1).Config()
	if c.ProbeMin != DefaultProbeMin || c.ProbeMax != DefaultProbeMax || c.Capacity != 1 || c.MaxGrindBits != DefaultMaxGrindBits ||
		c.ReportAge != DefaultReportAge || c.RateSample != DefaultRateSample || c.Params.CoolDown != DefaultCoolDown {
		t.Errorf("defaults: %+v", c)
	}
}

// TestControllerProbes: Start schedules the first probe, each ProbeDue the
// next and a probe near a uniform key (drawn as RandomPoint draws it, from
// the source passed in); ProbeNow probes without scheduling; off, the
// controller neither schedules nor probes on its own.
func TestControllerProbes(t *testing.T) {
	c := newCtl(t, testCfg(), 7)
	twin := newRNG(7)
	uniform := func() int64 { return DefaultProbeMin + twin.Int64N(DefaultProbeMax-DefaultProbeMin+1) }
	if a := one(t, c.Step(0, Event[string]{Kind: Start})); a.Kind != ScheduleProbe || a.After != uniform() {
		t.Fatalf("start: %+v", a)
	}
	for now := int64(0); now < 5; now++ {
		acts := c.Step(now, Event[string]{Kind: ProbeDue})
		if len(acts) != 2 || acts[0].Kind != ScheduleProbe || acts[0].After != uniform() {
			t.Fatalf("probe due: %+v", acts)
		}
		if p := acts[1]; p.Kind != ProbeNear || !p.Nudge || p.Key != (keyspace.Region{}).RandomPoint(twin) {
			t.Fatalf("probe: %+v", p)
		}
	}
	if p := one(t, c.Step(9, Event[string]{Kind: ProbeNow})); p.Kind != ProbeNear || p.Key != (keyspace.Region{}).RandomPoint(twin) {
		t.Fatalf("probe now: %+v", p)
	}
	fixed := testCfg()
	fixed.ProbeMin, fixed.ProbeMax = 5, 5
	if a := one(t, newCtl(t, fixed, 1).Step(0, Event[string]{Kind: Start})); a.After != 5 {
		t.Fatalf("fixed wait: %+v", a)
	}
	off := testCfg()
	off.Off = true
	c = newCtl(t, off, 7)
	for _, k := range []EventKind{Start, ProbeDue} {
		if acts := c.Step(0, Event[string]{Kind: k}); acts != nil {
			t.Fatalf("off, event %d: %+v", k, acts)
		}
	}
	if p := one(t, c.Step(0, Event[string]{Kind: ProbeNow})); p.Kind != ProbeNear {
		t.Fatalf("off, probe now: %+v", p)
	}
}

// TestControllerRate: the rate is measured between samples of the served
// counter at least RateSample apart; a counter that went back gives no
// rate, and the next sample starts afresh.
func TestControllerRate(t *testing.T) {
	c := newCtl(t, testCfg(), 1)
	for i, s := range []struct {
		now    int64
		served float64
		rate   float64
	}{
		{1000, 0, 0},
		{1500, 100, 0},   // under a second since the first sample: no new rate
		{3000, 100, 50},  // 100 requests over 2 s
		{3999, 900, 50},  // too soon
		{4000, 400, 300}, // 300 over 1 s
		{6000, 10, 300},  // the counter went back (a move): no rate, a new sample
		{8000, 210, 100},
	} {
		l := one(t, c.Step(s.now, Event[string]{Kind: LoadAsked, Counts: counts(3, 4, s.served)})).Load
		if l.Rate != s.rate || l.IndexEntries != 3 || l.ClosestJobs != 4 || l.Capacity != 1 {
			t.Fatalf("sample %d: load %+v, want rate %v", i, l, s.rate)
		}
	}
	if a := one(t, c.Step(9000, Event[string]{Kind: LoadAsked})); a.Kind != NeedCounts {
		t.Fatalf("load asked without counts: %+v", a)
	}
}

// TestControllerReport: the piggy-backed report is reused for ReportAge,
// then counted again; a move or a hand-over makes it due at once.
func TestControllerReport(t *testing.T) {
	c := newCtl(t, testCfg(), 1)
	report := func(now int64, cs *Counts) Action[string] {
		return one(t, c.Step(now, Event[string]{Kind: ReportDue, Counts: cs}))
	}
	if a := report(0, nil); a.Kind != NeedCounts {
		t.Fatalf("first report: %+v", a)
	}
	if a := report(0, counts(5, 0, 0)); a.Kind != Publish || a.Load.IndexEntries != 5 {
		t.Fatalf("first report counted: %+v", a)
	}
	if a := report(999, nil); a.Kind != Publish || a.Load.IndexEntries != 5 {
		t.Fatalf("report reused: %+v", a)
	}
	if a := report(1000, nil); a.Kind != NeedCounts {
		t.Fatalf("report aged: %+v", a)
	}
	report(1000, counts(6, 0, 0))
	c.Step(1200, Event[string]{Kind: HandedOver})
	if a := report(1300, nil); a.Kind != NeedCounts {
		t.Fatalf("report after a hand-over: %+v", a)
	}
	if a := report(1300, counts(6, 0, 0)); a.Load.LastChange != 1200 || a.Load.LastMove != 0 {
		t.Fatalf("report after a hand-over: %+v", a.Load)
	}
	c.Step(1400, Event[string]{Kind: Moved})
	if a := report(1500, nil); a.Kind != NeedCounts {
		t.Fatalf("report after a move: %+v", a)
	}
	if a := report(1500, counts(0, 0, 0)); a.Load.LastChange != 1400 || a.Load.LastMove != 1400 || c.Moves() != 1 {
		t.Fatalf("report after a move: %+v, %d moves", a.Load, c.Moves())
	}
}

// heavy is a load far above the tests' light node (Trivial 100, φ 0.4).
var heavy = Load{IndexEntries: 1000}

// TestControllerObserved: a load piggy-backed on a reply starts an
// exchange when one of the two should move, at most one at a time and one
// per cool-down, and never when balancing is off.
func TestControllerObserved(t *testing.T) {
	observed := func(c *Controller[string], now int64, l Load, cs *Counts) []Action[string] {
		return c.Step(now, Event[string]{Kind: Observed, Peer: "h", Load: l, Counts: cs})
	}
	c := newCtl(t, testCfg(), 1)
	if a := one(t, observed(c, minute, heavy, nil)); a.Kind != NeedCounts {
		t.Fatalf("stale report: %+v", a)
	}
	if acts := observed(c, minute, Load{IndexEntries: 20}, counts(10, 0, 0)); acts != nil {
		t.Fatalf("balanced: %+v", acts)
	}
	a := one(t, observed(c, minute+1, heavy, nil)) // the report counted above is reused
	if a.Kind != AskLoad || a.Peer != "h" || !a.Nudge || !a.Reaction || a.Decision.Verdict != SelfMoves || c.Reactions() != 1 {
		t.Fatalf("heavy peer: %+v (%d reactions)", a, c.Reactions())
	}
	if acts := observed(c, 20*minute, heavy, counts(10, 0, 0)); acts != nil || c.Listening(20*minute) {
		t.Fatalf("reaction in flight: %+v", acts)
	}
	c.Step(20*minute, Event[string]{Kind: ReactionEnded})
	if acts := observed(c, 11*minute, heavy, counts(10, 0, 0)); acts != nil {
		t.Fatalf("within the cool-down of the last reaction: %+v", acts)
	}
	if a := one(t, observed(c, 11*minute+1, Load{}, counts(1000, 0, 0))); a.Kind != AskLoad || a.Decision.Verdict != OtherMoves {
		t.Fatalf("light peer after the cool-down: %+v", a)
	}
	off := testCfg()
	off.Off = true
	c = newCtl(t, off, 1)
	if acts := observed(c, minute, heavy, counts(10, 0, 0)); acts != nil || c.Listening(minute) {
		t.Fatalf("off: %+v", acts)
	}
	// A nudge is followed also when off: the heavier node asked for it.
	if a := one(t, c.Step(minute, Event[string]{Kind: Nudged, Peer: "h"})); a.Kind != AskLoad || a.Peer != "h" || a.Nudge || a.Reaction {
		t.Fatalf("nudged: %+v", a)
	}
}

// TestControllerExchange: a probe's answer leads to a nudge, a split
// question or nothing, and a split answer to a move only through the
// gate.
func TestControllerExchange(t *testing.T) {
	answered := func(c *Controller[string], now int64, l Load, nudge bool) Action[string] {
		return one(t, c.Step(now, Event[string]{Kind: LoadAnswered, Peer: "p", Load: l, Counts: counts(10, 0, 0), Nudge: nudge}))
	}
	c := newCtl(t, testCfg(), 1)
	if a := answered(c, minute, Load{}, true); a.Kind != Settled || a.Decision.Verdict != None {
		t.Fatalf("10 entries against none (trivial): %+v", a)
	}
	if a := one(t, c.Step(minute, Event[string]{Kind: LoadAnswered, Peer: "p", Load: Load{}, Counts: counts(1000, 0, 0), Nudge: true})); a.Kind != SendNudge || a.Decision.Verdict != OtherMoves {
		t.Fatalf("light peer, nudging: %+v", a)
	}
	if a := one(t, c.Step(minute, Event[string]{Kind: LoadAnswered, Peer: "p", Load: Load{}, Counts: counts(1000, 0, 0)})); a.Kind != Settled || a.Decision.Verdict != OtherMoves {
		t.Fatalf("light peer, not nudging: %+v", a)
	}
	if a := answered(c, minute, Load{IndexEntries: 20}, true); a.Kind != Settled || a.Decision.Verdict != None {
		t.Fatalf("balanced: %+v", a)
	}
	ask := answered(c, minute, heavy, true)
	if ask.Kind != AskSplit || ask.Peer != "p" || ask.Decision.Verdict != SelfMoves {
		t.Fatalf("heavy peer: %+v", ask)
	}
	prefix := keyspace.Pos{0xa5, 0xff}
	split := func(now int64, s SplitAnswer, d Decision) Action[string] {
		return one(t, c.Step(now, Event[string]{Kind: SplitAnswered, Peer: "p", Split: s, Decision: d}))
	}
	for _, tc := range []struct {
		split  SplitAnswer
		reason string
	}{
		{SplitAnswer{}, "does not split"},
		{SplitAnswer{OK: true, Bits: -1}, "does not split"},
		{SplitAnswer{OK: true, Prefix: prefix, Bits: 29}, "splits at 29 bits, deeper than 28 to grind"},
	} {
		if a := split(minute, tc.split, ask.Decision); a.Kind != Settled || a.Decision.Verdict != None ||
			!strings.Contains(a.Decision.Reason, tc.reason) || a.Decision.Self != ask.Decision.Self {
			t.Fatalf("split %+v: %+v", tc.split, a)
		}
	}
	if a := split(minute, SplitAnswer{OK: true, Prefix: prefix, Bits: 28}, Decision{Verdict: OtherMoves}); a.Kind != Settled || a.Decision.Verdict != OtherMoves {
		t.Fatalf("split answer to an exchange that did not decide self moves: %+v", a)
	}
	a := split(minute, SplitAnswer{OK: true, Prefix: prefix, Bits: 12}, ask.Decision)
	if a.Kind != MoveTo || a.Peer != "p" || a.Target != keyspace.NewRegion(prefix, 12) || a.Decision != ask.Decision {
		t.Fatalf("split at 12 bits: %+v", a)
	}
	c.Step(minute+5, Event[string]{Kind: Moved})
	// A second exchange decided before the move must not move it again.
	if a := split(minute+6, SplitAnswer{OK: true, Prefix: prefix, Bits: 12}, ask.Decision); a.Kind != Settled || !strings.Contains(a.Decision.Reason, "while the exchange ran") {
		t.Fatalf("split answer after a move: %+v", a)
	}
	// The cool-down after the move: no verdict for 10 min, then one.
	if a := answered(c, 11*minute+4, heavy, true); a.Kind != Settled || !strings.Contains(a.Decision.Reason, "cool-down") {
		t.Fatalf("within the cool-down: %+v", a)
	}
	if a := answered(c, 11*minute+5, heavy, true); a.Kind != AskSplit {
		t.Fatalf("after the cool-down: %+v", a)
	}
	if a := one(t, c.Step(minute, Event[string]{Kind: LoadAnswered, Peer: "p", Load: heavy})); a.Kind != NeedCounts {
		t.Fatalf("answer without counts: %+v", a)
	}
}

// TestControllerInitialMove: the node's last move before the controller
// started (its position record's time) holds it back as a move would.
func TestControllerInitialMove(t *testing.T) {
	cfg := testCfg()
	cfg.LastMove = 5 * minute
	c := newCtl(t, cfg, 1)
	l := one(t, c.Step(6*minute, Event[string]{Kind: LoadAsked, Counts: counts(1, 2, 0)})).Load
	if l.LastMove != 5*minute || l.LastChange != 0 {
		t.Fatalf("load %+v", l)
	}
	a := one(t, c.Step(6*minute, Event[string]{Kind: LoadAnswered, Peer: "p", Load: heavy, Counts: counts(0, 0, 0)}))
	if a.Kind != Settled || !strings.Contains(a.Decision.Reason, "cool-down") {
		t.Fatalf("answer within the cool-down of the initial move: %+v", a)
	}
}

func TestControllerDeterministic(t *testing.T) {
	run := func() []Action[string] {
		c := newCtl(t, testCfg(), 3)
		var out []Action[string]
		for i := range 50 {
			out = append(out, c.Step(int64(i)*minute, Event[string]{Kind: ProbeDue})...)
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("action %d: %+v, then %+v", i, a[i], b[i])
		}
	}
}
