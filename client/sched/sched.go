// Package sched is the worker client's scheduler across attached projects:
// BOINC's debt-based policy (seed 001, "Client scheduling policies (version
// 4)"), so CPU time follows the volunteer's resource shares. Pure: no I/O,
// no clock, no goroutines; time comes in as time.Duration.
//
// CPU scheduling ("CPU scheduling" and "A sketch of the CPU scheduling
// algorithm" in the seed):
//
//   - The debt to a project is the CPU time we owe it. When a project
//     uses cpu, Charge decreases its debt by cpu and increases the debt of
//     every project that has work by its share of cpu, the share taken
//     over projects that have work only (adjusted_total_resource_share).
//   - A project with no runnable work does not build up debt: its debt is
//     reset to zero and its share is left out until it has work again
//     (sketch step 1). Next learns which projects have work from its
//     runnable argument; Charge counts the charged project as having work.
//   - Next follows the debt ordering: the project with the largest
//     anticipated debt that has work, ties broken by name. Each Charge
//     starts a new scheduling round, setting anticipated debt to debt;
//     each Next in a round lowers the chosen project's anticipated debt by
//     the expected pay-off (sketch steps 3-4), so several slots freed
//     together are spread over projects rather than all given to one.
//
// Simplifications: one resource type (CPU) and N identical slots; a single
// debt per project (the seed's, which is neither split into short- and
// long-term debt nor weighted by deadlines); no preemption, so a round
// chooses only for the slots that are free. Later BOINC clients normalise
// debts to mean zero and cap them; so do we: after every change the debts
// of projects with work are shifted by a common offset so that they sum to
// zero once clamped to ±MaxDebt (the default DefaultMaxDebt), which bounds
// how much a project that was starved while it had work may catch up. The
// expected pay-off of a pick, the seed's total_work_done_this_period /
// num_cpus, is taken as the mean CPU time per Charge so far (what a slot
// delivers between accountings), or DefaultPayoff before the first Charge.
//
// The seed's work fetch policy is WorkRequest (fetch.go).
package sched

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// DefaultMaxDebt is the initial bound on the absolute debt of a project: a
// day, the period over which the seed wants shares to hold.
const DefaultMaxDebt = 24 * time.Hour

// DefaultPayoff is the expected pay-off of a pick before any Charge.
const DefaultPayoff = time.Minute

// Project is a project the client is attached to. Share is its resource
// share, which must be positive; only ratios between shares matter.
type Project struct {
	Name  string
	Share float64
}

type state struct {
	share    float64
	debt     float64 // seconds of CPU owed; 0 while idle
	reserved float64 // seconds picked in this round (anticipated = debt - reserved)
	idle     bool    // no runnable work at the last Next
}

// Scheduler holds the debts of the attached projects. It is not safe for
// concurrent use.
type Scheduler struct {
	slots     int
	maxDebt   float64 // seconds
	names     []string
	proj      map[string]*state
	charged   float64 // total seconds charged, for the expected pay-off
	nCharges  int
	roundOpen bool
}

// New returns a scheduler for projects sharing slots parallel CPU slots,
// all debts zero.
func New(projects []Project, slots int) (*Scheduler, error) {
	if len(projects) == 0 {
		return nil, errors.New("sched: no projects")
	}
	if slots < 1 {
		return nil, fmt.Errorf("sched: slots %d < 1", slots)
	}
	s := &Scheduler{slots: slots, maxDebt: DefaultMaxDebt.Seconds(), proj: map[string]*state{}}
	for _, p := range projects {
		if err := s.Add(p); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func validShare(share float64) bool { return share > 0 && !math.IsInf(share, 1) }

// Add attaches a project with zero debt.
func (s *Scheduler) Add(p Project) error {
	if p.Name == "" {
		return errors.New("sched: empty project name")
	}
	if _, dup := s.proj[p.Name]; dup {
		return fmt.Errorf("sched: duplicate project %q", p.Name)
	}
	if !validShare(p.Share) {
		return fmt.Errorf("sched: project %q: share %v is not positive and finite", p.Name, p.Share)
	}
	s.proj[p.Name] = &state{share: p.Share}
	i, _ := slices.BinarySearch(s.names, p.Name)
	s.names = slices.Insert(s.names, i, p.Name)
	return nil
}

// Remove detaches a project; the remaining debts are renormalised. The last
// project cannot be removed.
func (s *Scheduler) Remove(name string) error {
	if _, ok := s.proj[name]; !ok {
		return fmt.Errorf("sched: unknown project %q", name)
	}
	if len(s.names) == 1 {
		return fmt.Errorf("sched: cannot remove %q, the last project", name)
	}
	delete(s.proj, name)
	i, _ := slices.BinarySearch(s.names, name)
	s.names = slices.Delete(s.names, i, i+1)
	s.normalise()
	return nil
}

// SetShare changes the resource share of a project; it affects debts from
// the next Charge on.
func (s *Scheduler) SetShare(name string, share float64) error {
	p, ok := s.proj[name]
	if !ok {
		return fmt.Errorf("sched: unknown project %q", name)
	}
	if !validShare(share) {
		return fmt.Errorf("sched: project %q: share %v is not positive and finite", name, share)
	}
	p.share = share
	return nil
}

// SetMaxDebt changes the bound on the absolute debt of a project and
// renormalises the debts.
func (s *Scheduler) SetMaxDebt(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("sched: max debt %v is not positive", d)
	}
	s.maxDebt = d.Seconds()
	s.normalise()
	return nil
}

// MaxDebt returns the bound on the absolute debt of a project.
func (s *Scheduler) MaxDebt() time.Duration { return seconds(s.maxDebt) }

// Charge records that project name used cpu time on one slot. Every project
// with work (name included) gains its share of cpu as debt, and name loses
// cpu; debts are then normalised and clamped. Charge ends the current
// scheduling round.
func (s *Scheduler) Charge(name string, cpu time.Duration) error {
	p, ok := s.proj[name]
	if !ok {
		return fmt.Errorf("sched: unknown project %q", name)
	}
	if cpu < 0 {
		return fmt.Errorf("sched: negative cpu %v for %q", cpu, name)
	}
	p.idle = false // it ran, so it had work in this period
	work := cpu.Seconds()
	total := 0.0
	for _, q := range s.proj {
		if !q.idle {
			total += q.share
		}
	}
	for _, q := range s.proj {
		if !q.idle {
			q.debt += q.share / total * work
		}
	}
	p.debt -= work
	s.normalise()
	s.charged += work
	s.nCharges++
	s.endRound()
	return nil
}

// Next returns the project a free slot should fetch or run work for next:
// among the projects for which runnable reports true, the one with the
// largest anticipated debt, ties broken by name. runnable is called once
// per project, in name order; nil means every project has work. A project
// without work has its debt reset to zero and its share left out until it
// has work again. ok is false if no project has work.
func (s *Scheduler) Next(runnable func(name string) bool) (name string, ok bool) {
	changed := false
	for _, n := range s.names {
		p := s.proj[n]
		has := runnable == nil || runnable(n)
		if has == p.idle {
			changed = true
			p.idle = !has
			p.debt, p.reserved = 0, 0
		}
	}
	if changed {
		s.normalise()
	}
	var best *state
	for _, n := range s.names {
		p := s.proj[n]
		if !p.idle && (best == nil || p.debt-p.reserved > best.debt-best.reserved) {
			best, name = p, n
		}
	}
	if best == nil {
		return "", false
	}
	best.reserved += s.payoff()
	s.roundOpen = true
	return name, true
}

// Debts returns a copy of the current debts, rounded to the nanosecond.
func (s *Scheduler) Debts() map[string]time.Duration {
	m := make(map[string]time.Duration, len(s.proj))
	for n, p := range s.proj {
		m[n] = seconds(p.debt)
	}
	return m
}

// Projects returns the attached projects in name order.
func (s *Scheduler) Projects() []Project {
	ps := make([]Project, 0, len(s.names))
	for _, n := range s.names {
		ps = append(ps, Project{Name: n, Share: s.proj[n].share})
	}
	return ps
}

// Slots returns the number of parallel CPU slots.
func (s *Scheduler) Slots() int { return s.slots }

func (s *Scheduler) payoff() float64 {
	if s.nCharges == 0 || s.charged == 0 {
		return DefaultPayoff.Seconds()
	}
	return s.charged / float64(s.nCharges)
}

func (s *Scheduler) endRound() {
	if !s.roundOpen {
		return
	}
	for _, p := range s.proj {
		p.reserved = 0
	}
	s.roundOpen = false
}

// normalise sets idle debts to zero and shifts the debts of projects with
// work by the offset c for which the sum of clamp(debt-c, ±maxDebt) is
// zero, then applies the clamp. The sum is decreasing in c, so c exists
// and is found by bisection when the mean alone does not keep every debt
// within bounds.
func (s *Scheduler) normalise() {
	var act []*state
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, n := range s.names {
		p := s.proj[n]
		if p.idle {
			p.debt = 0
			continue
		}
		act = append(act, p)
		lo, hi, sum = min(lo, p.debt), max(hi, p.debt), sum+p.debt
	}
	if len(act) == 0 {
		return
	}
	m := s.maxDebt
	c := sum / float64(len(act))
	if lo-c < -m || hi-c > m {
		f := func(c float64) float64 {
			t := 0.0
			for _, p := range act {
				t += math.Max(-m, math.Min(m, p.debt-c))
			}
			return t
		}
		a, b := lo-m, hi+m // f(a) = n*m > 0 > -n*m = f(b)
		for range 200 {
			mid := a + (b-a)/2
			if mid <= a || mid >= b {
				break
			}
			if f(mid) > 0 {
				a = mid
			} else {
				b = mid
			}
		}
		c = a + (b-a)/2
	}
	for _, p := range act {
		p.debt = math.Max(-m, math.Min(m, p.debt-c))
	}
}

func seconds(x float64) time.Duration {
	ns := math.Round(x * 1e9)
	switch {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(ns)
}
