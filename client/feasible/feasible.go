// Package feasible decides whether the worker client can finish a job
// before its claim lapses (issue 22, "claim only what can be finished";
// BOINC #6936, #3972). It owns the client's measured availability — its
// on and off periods, hence its active fraction (seed 001: the fraction
// of wall time the client runs) — and, per application, the run times of
// the jobs it finished. Pure, like etcd-raft: no clock, no goroutines, no
// locks, no I/O; time comes in as arguments, and State is a plain struct
// the caller saves and loads as JSON.
//
// A job is feasible when its expected wall time, from its claim to its
// end, times Config.Margin, fits in its T_finish. The expected wall time
// is the larger of two bounds:
//
//   - the mean: run time / active fraction (BOINC's estimate);
//   - the off bound: run time + k × the longest off period of the window,
//     where k = 1 + ⌊run time / the shortest on period⌋ is how many off
//     periods can fall inside the run at most (the client may go off just
//     after the claim, and every shorter on period may end before it is
//     done).
//
// The mean alone misses deadlines whenever T_finish is short beside the
// client's off periods: a job of 10 min with T_finish 1 h is "40 min" on
// average for a client on 30 % of the time, and 6 h late when the client
// goes off for 6 h after claiming it. With the off bound, a client misses
// no deadline as long as its coming off periods are no longer, and its on
// periods no shorter, than those of the window, and its run times no
// longer than Margin × the estimate (see Estimate).
//
// The run time of a job is estimated from the application's history: the
// longest of its latest finished runs (per operation times the job's
// operations when the spec carries an estimate, estOps > 0; job.Spec has
// no such field yet, so the client passes 0). An application never run
// here is always claimed (claim it, learn from it): a new application is
// tried rather than refused for ignorance; its first guess
// (Config.FirstGuess, at most T_finish / (2 × Margin)) only serves the
// early release of a run that turns out late.
package feasible

import (
	"fmt"
	"math"
	"time"
)

// Config are the estimator's parameters. Zero values take the defaults.
type Config struct {
	// Margin multiplies the expected wall time before it is compared
	// with T_finish (≥ 1). Default 1.2.
	Margin float64
	// Window is how far back on and off periods are kept to measure the
	// active fraction. Default 7 days.
	Window time.Duration
	// FirstGuess is the run time assumed for an application never run
	// here, at most T_finish / (2 × Margin). Default 10 min.
	FirstGuess time.Duration
	// MinFraction is the least active fraction assumed (> 0), so a
	// client on for a moment in a week still divides by something sane.
	// Default 0.02.
	MinFraction float64
	// MeanOnly drops the off bound: the expected wall time is BOINC's
	// mean alone (for comparison; it misses short deadlines).
	MeanOnly bool
}

// Defaults of Config.
const (
	DefaultMargin      = 1.2
	DefaultWindow      = 7 * 24 * time.Hour
	DefaultFirstGuess  = 10 * time.Minute
	DefaultMinFraction = 0.02
)

// Bounds of State: periods kept, and runs kept per application.
const (
	MaxPeriods = 512
	MaxRuns    = 16
)

func (c *Config) applyDefaults() {
	if c.Margin < 1 {
		c.Margin = DefaultMargin
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.FirstGuess <= 0 {
		c.FirstGuess = DefaultFirstGuess
	}
	if c.MinFraction <= 0 || c.MinFraction > 1 {
		c.MinFraction = DefaultMinFraction
	}
}

// Period is one on period of the client: from Start to End.
type Period struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// App is what the estimator knows of one application: its latest run
// times, oldest first (MaxRuns at most), in seconds per job, and in
// seconds per operation for the runs whose job carried an estimate.
type App struct {
	Runs  []float64 `json:"runs_s,omitempty"`
	PerOp []float64 `json:"per_op_s,omitempty"`
}

// State is the estimator's whole state, to save and load as JSON.
type State struct {
	// Periods are the closed on periods within the window, oldest first.
	Periods []Period `json:"periods"`
	// OnSince is when the current on period began; zero when off.
	OnSince time.Time `json:"on_since"`
	// LastSeen is the latest time the client was seen on: a period left
	// open by a crash is closed there on Load.
	LastSeen time.Time `json:"last_seen"`
	// Apps are the applications' run times, by application name.
	Apps map[string]*App `json:"apps"`
}

// Estimator is the state and its parameters.
type Estimator struct {
	cfg Config
	st  State
}

// New is an estimator with st's state (zero: nothing known yet). A
// period st left open (the client stopped without Off) is closed at
// st.LastSeen.
func New(cfg Config, st State) *Estimator {
	cfg.applyDefaults()
	if st.Apps == nil {
		st.Apps = map[string]*App{}
	}
	if !st.OnSince.IsZero() {
		end := st.LastSeen
		if end.Before(st.OnSince) {
			end = st.OnSince
		}
		st.Periods = append(st.Periods, Period{Start: st.OnSince, End: end})
		st.OnSince = time.Time{}
	}
	return &Estimator{cfg: cfg, st: st}
}

// State is a copy of the estimator's state, to save.
func (e *Estimator) State() State {
	st := e.st
	st.Periods = append([]Period(nil), e.st.Periods...)
	st.Apps = make(map[string]*App, len(e.st.Apps))
	for n, a := range e.st.Apps {
		st.Apps[n] = &App{Runs: append([]float64(nil), a.Runs...), PerOp: append([]float64(nil), a.PerOp...)}
	}
	return st
}

// On records that the client came on at now (Run started).
func (e *Estimator) On(now time.Time) {
	if !e.st.OnSince.IsZero() {
		return
	}
	e.st.OnSince, e.st.LastSeen = now, now
}

// Seen records that the client is on at now, so a crash loses no more
// than the time since.
func (e *Estimator) Seen(now time.Time) {
	if !e.st.OnSince.IsZero() && now.After(e.st.LastSeen) {
		e.st.LastSeen = now
	}
}

// Off records that the client went off at now (Run stopped).
func (e *Estimator) Off(now time.Time) {
	if e.st.OnSince.IsZero() {
		return
	}
	if now.Before(e.st.OnSince) {
		now = e.st.OnSince
	}
	e.st.Periods = append(e.st.Periods, Period{Start: e.st.OnSince, End: now})
	e.st.OnSince, e.st.LastSeen = time.Time{}, now
	e.trim(now)
}

// trim drops the periods that ended before the window, and the oldest
// beyond MaxPeriods.
func (e *Estimator) trim(now time.Time) {
	from := now.Add(-e.cfg.Window)
	i := 0
	for i < len(e.st.Periods) && e.st.Periods[i].End.Before(from) {
		i++
	}
	i = max(i, len(e.st.Periods)-MaxPeriods)
	e.st.Periods = append(e.st.Periods[:0], e.st.Periods[i:]...)
}

// Finished records a job of app that ran for run (the time it ran, not
// counting the client's off periods) and carried estOps operations (0:
// no estimate).
func (e *Estimator) Finished(app string, estOps float64, run time.Duration) {
	if run <= 0 {
		return
	}
	a := e.st.Apps[app]
	if a == nil {
		a = &App{}
		e.st.Apps[app] = a
	}
	a.Runs = push(a.Runs, run.Seconds())
	if estOps > 0 {
		a.PerOp = push(a.PerOp, run.Seconds()/estOps)
	}
}

func push(xs []float64, x float64) []float64 {
	if len(xs) >= MaxRuns {
		xs = append(xs[:0], xs[len(xs)-MaxRuns+1:]...)
	}
	return append(xs, x)
}

// RunTime is the estimated run time of a job of app with estOps
// operations (0: unknown): the longest of the application's latest runs,
// per operation when both the job and some runs carry an estimate; known
// reports whether the application ran here (else FirstGuess).
func (e *Estimator) RunTime(app string, estOps float64) (run time.Duration, known bool) {
	a := e.st.Apps[app]
	switch {
	case a == nil || len(a.Runs) == 0:
		return e.cfg.FirstGuess, false
	case estOps > 0 && len(a.PerOp) > 0:
		return seconds(maxOf(a.PerOp) * estOps), true
	}
	return seconds(maxOf(a.Runs)), true
}

// guess is RunTime, with the first guess of an unknown application at
// most tFinish / (2 × Margin).
func (e *Estimator) guess(app string, estOps float64, tFinish time.Duration) (time.Duration, bool) {
	run, known := e.RunTime(app, estOps)
	if !known {
		run = min(run, seconds(tFinish.Seconds()/(2*e.cfg.Margin)))
	}
	return run, known
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Availability is what the periods of the window say at a time: the
// active fraction (0..1], and the longest off and shortest on periods
// (0: none closed yet).
type Availability struct {
	Fraction float64
	MaxOff   time.Duration
	MinOn    time.Duration
}

// Availability measures the periods of the window ending at now, the
// current on period included.
func (e *Estimator) Availability(now time.Time) Availability {
	from := now.Add(-e.cfg.Window)
	ps := e.st.Periods
	if !e.st.OnSince.IsZero() {
		ps = append(ps[:len(ps):len(ps)], Period{Start: e.st.OnSince, End: now})
	}
	var av Availability
	if len(ps) == 0 {
		av.Fraction = 1
		return av
	}
	start := ps[0].Start
	if start.Before(from) {
		start = from
	}
	var on time.Duration
	for i, p := range ps {
		s := p.Start
		if s.Before(from) {
			s = from
		}
		if p.End.After(s) {
			on += p.End.Sub(s)
		}
		if i > 0 {
			av.MaxOff = max(av.MaxOff, p.Start.Sub(ps[i-1].End))
		}
		if closed := i < len(e.st.Periods); closed && (av.MinOn == 0 || p.End.Sub(p.Start) < av.MinOn) {
			av.MinOn = p.End.Sub(p.Start)
		}
	}
	av.Fraction = 1
	if span := now.Sub(start); span > 0 {
		av.Fraction = min(1, max(e.cfg.MinFraction, on.Seconds()/span.Seconds()))
	}
	return av
}

// Wall is the expected wall time of a run of run from now, without the
// margin: the larger of the mean and the off bound (the mean alone with
// Config.MeanOnly); bound names the one that decided.
func (e *Estimator) Wall(run time.Duration, now time.Time) (wall time.Duration, bound string) {
	av := e.Availability(now)
	wall, bound = seconds(run.Seconds()/av.Fraction), "mean"
	if e.cfg.MeanOnly || av.MaxOff == 0 {
		return wall, bound
	}
	k := int64(1)
	if av.MinOn > 0 {
		k += int64(run / av.MinOn)
	}
	if off := run + time.Duration(k)*av.MaxOff; off > wall {
		return off, "off periods"
	}
	return wall, bound
}

// Feasible reports whether a job of app with estOps operations (0:
// unknown) claimed at now can end within tFinish of its claim: its
// expected wall time (Wall) times Config.Margin is at most tFinish. est
// is that time with the margin; reason says why not ("" when ok).
func (e *Estimator) Feasible(app string, estOps float64, tFinish time.Duration, now time.Time) (ok bool, est time.Duration, reason string) {
	run, known := e.guess(app, estOps, tFinish)
	wall, bound := e.Wall(run, now)
	est = seconds(wall.Seconds() * e.cfg.Margin)
	if est <= tFinish || !known {
		// An application never run here is claimed whatever the
		// estimate says: its run time is a guess, and refusing it would
		// never learn better (a client on in short sessions refused
		// every new application, its first guess spread over many off
		// periods). ShouldRelease gives it back if it runs late.
		return true, est, ""
	}
	guess := "run time"
	if !known {
		guess = "first guess of run time"
	}
	return false, est, fmt.Sprintf("needs %v (%s %v, by the %s, ×%.2g margin), T_finish %v",
		est.Round(time.Second), guess, run.Round(time.Second), bound, e.cfg.Margin, tFinish)
}

// ShouldRelease reports whether a claimed job of app, claimed elapsed
// ago (on the client's clock) and run for ran so far (0: not started),
// can no longer end within tFinish of its claim even on the mean: the
// rest of its estimated run time (at least a tenth of the estimate, once
// ran is past it), divided by the active fraction, added to elapsed, is
// over tFinish. No margin and no off bound: a claim under way is given
// back only when it is expected to be late, not when it might be.
func (e *Estimator) ShouldRelease(app string, estOps float64, ran, elapsed, tFinish time.Duration, now time.Time) (bool, string) {
	run, _ := e.guess(app, estOps, tFinish)
	left := max(run-ran, run/10)
	wall := seconds(left.Seconds() / e.Availability(now).Fraction)
	if elapsed+wall <= tFinish {
		return false, ""
	}
	return true, fmt.Sprintf("claimed %v ago, %v left expected, T_finish %v",
		elapsed.Round(time.Second), wall.Round(time.Second), tFinish)
}
