package feasible

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The simulated day (issue 22's Done-when): a client on about 30 % of
// the time, in on periods of 1–4 h and off periods of 3–8 h (seeded),
// with simSlots slots, is served mixed jobs arriving over the days, each
// open to it for simOpen after its arrival (other clients take it then).
// It warms up for simWarm days, learning its availability and each
// application's speed; the claims of the next day are counted, and
// followed until they end. A claim misses its deadline when its job has
// not ended within T_finish of the claim.
const (
	simStep  = time.Minute
	simSlots = 2
	simWarm  = 3
	simOpen  = time.Hour
)

// simApps are the applications: run times uniform in [min, max].
var simApps = []struct {
	name     string
	min, max time.Duration
}{
	{"blast", 5 * time.Minute, 15 * time.Minute},
	{"fold", 30 * time.Minute, time.Hour},
	{"render", time.Hour, 2 * time.Hour},
	{"climate", 3 * time.Hour, 5 * time.Hour},
}

var simTFinish = []time.Duration{time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 12 * time.Hour, 24 * time.Hour}

type simJob struct {
	app     string
	run     time.Duration // hidden from the client: its true run time
	tFinish time.Duration
	arrive  time.Time
}

// simWorld is a seeded day of availability and jobs, the same for every
// policy.
type simWorld struct {
	on   []Period // the client's on periods
	jobs []simJob // by arrival
	end  time.Time
}

func newSimWorld(seed uint64) simWorld {
	r := rand.New(rand.NewPCG(seed, 22))
	uniform := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	w := simWorld{end: t0.Add((simWarm + 2) * 24 * time.Hour)}
	for at := t0.Add(uniform(0, 8*time.Hour)); at.Before(w.end); {
		p := Period{Start: at, End: at.Add(uniform(time.Hour, 4*time.Hour))}
		w.on = append(w.on, p)
		at = p.End.Add(uniform(3*time.Hour, 8*time.Hour))
	}
	for at := t0; at.Before(w.end); at = at.Add(uniform(time.Minute, 20*time.Minute)) {
		a := simApps[r.IntN(len(simApps))]
		w.jobs = append(w.jobs, simJob{app: a.name, run: uniform(a.min, a.max),
			tFinish: simTFinish[r.IntN(len(simTFinish))], arrive: at})
	}
	return w
}

func (w simWorld) isOn(now time.Time) bool {
	for _, p := range w.on {
		if !now.Before(p.Start) && now.Before(p.End) {
			return true
		}
	}
	return false
}

// simPolicy is how a client claims: check consults Feasible, release
// gives back with ShouldRelease; est is nil for the naive client.
type simPolicy struct {
	name           string
	est            bool
	check, release bool
	cfg            Config
}

// simCount is what the counted day's claims came to.
type simCount struct {
	claims, inTime, missed, released int
	active                           float64 // the day's true active fraction
}

type simRun struct {
	job     int
	claimed time.Time
	ran     time.Duration
	counted bool
}

// simulate runs policy p through world w, stepping a minute at a time.
func simulate(w simWorld, p simPolicy) simCount {
	var e *Estimator
	if p.est {
		e = New(p.cfg, State{})
	}
	var n simCount
	dayFrom, dayTo := t0.Add(simWarm*24*time.Hour), t0.Add((simWarm+1)*24*time.Hour)
	taken := make([]bool, len(w.jobs))
	var running []simRun
	wasOn, onSteps := false, 0
	for now := t0; now.Before(w.end); now = now.Add(simStep) {
		on := w.isOn(now)
		if on != wasOn && e != nil {
			if on {
				e.On(now)
			} else {
				e.Off(now)
			}
		}
		wasOn = on
		if !now.Before(dayFrom) && now.Before(dayTo) && on {
			onSteps++
		}
		keep := running[:0]
		for _, r := range running {
			j := w.jobs[r.job]
			elapsed := now.Sub(r.claimed)
			switch {
			case elapsed > j.tFinish: // lapsed unfinished: a missed deadline
				n.missed += count(r.counted)
			case !on:
				keep = append(keep, r)
			case p.release && releases(e, j, r, elapsed, now):
				n.released += count(r.counted)
			case r.ran+simStep >= j.run: // ends within this step, its result sent
				n.inTime += count(r.counted)
				if e != nil {
					e.Finished(j.app, 0, j.run)
				}
			default:
				r.ran += simStep
				keep = append(keep, r)
			}
		}
		running = keep
		for i := 0; on && len(running) < simSlots && i < len(w.jobs) && !w.jobs[i].arrive.After(now); i++ {
			j := w.jobs[i]
			if taken[i] || now.Sub(j.arrive) > simOpen {
				continue
			}
			if p.check {
				if ok, _, _ := e.Feasible(j.app, 0, j.tFinish, now); !ok {
					continue
				}
			}
			taken[i] = true
			counted := !now.Before(dayFrom) && now.Before(dayTo)
			n.claims += count(counted)
			running = append(running, simRun{job: i, claimed: now, counted: counted})
		}
	}
	n.active = float64(onSteps) * simStep.Hours() / 24
	return n
}

func releases(e *Estimator, j simJob, r simRun, elapsed time.Duration, now time.Time) bool {
	ok, _ := e.ShouldRelease(j.app, 0, r.ran, elapsed, j.tFinish, now)
	return ok
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSimulatedDay is issue 22's Done-when: over seeded days of mixed
// jobs, a client on about 30 % of the time that claims only feasible jobs
// misses no deadline once it has learnt its availability and each
// application's speed (warm-up days), where a naive client, claiming
// whatever it is served when a slot is free, misses many. Controls: the
// feasible client with its check disabled (releasing only) misses
// deadlines, and so does BOINC's mean estimate alone.
func TestSimulatedDay(t *testing.T) {
	policies := []simPolicy{
		{name: "naive"},
		{name: "check disabled", est: true, release: true},
		{name: "mean only", est: true, check: true, release: true, cfg: Config{MeanOnly: true}},
		{name: "feasible", est: true, check: true, release: true},
	}
	totals := map[string]simCount{}
	for seed := uint64(1); seed <= 5; seed++ {
		w := newSimWorld(seed)
		for _, p := range policies {
			n := simulate(w, p)
			t.Logf("seed %d, %-14s: active %.0f %%, %3d claims, %3d in time, %3d missed, %2d released early",
				seed, p.name, 100*n.active, n.claims, n.inTime, n.missed, n.released)
			tot := totals[p.name]
			tot.claims, tot.inTime, tot.missed, tot.released = tot.claims+n.claims, tot.inTime+n.inTime,
				tot.missed+n.missed, tot.released+n.released
			totals[p.name] = tot
			if p.name == "feasible" && n.missed > 0 {
				t.Errorf("seed %d: the feasible client missed %d deadlines", seed, n.missed)
			}
		}
	}
	for _, p := range policies {
		n := totals[p.name]
		t.Logf("5 days, %-14s: %3d claims, %3d in time, %3d missed, %2d released early",
			p.name, n.claims, n.inTime, n.missed, n.released)
	}
	for _, name := range []string{"naive", "check disabled", "mean only"} {
		if totals[name].missed == 0 {
			t.Errorf("%s: no missed deadline; the simulation does not exercise the check", name)
		}
	}
	if totals["feasible"].inTime == 0 {
		t.Error("the feasible client finished nothing: refusing every job is not the point")
	}
}
