package sched

import (
	"fmt"
	"math"
	"time"
)

// Urgency is how badly the client needs work, as returned by WorkRequest
// (seed 001, "A sketch of the work fetch algorithm").
type Urgency int

// The urgency levels, in increasing order.
const (
	DontNeedWork        Urgency = iota // no project will starve within the connection period
	NeedWork                           // some project will starve within the connection period
	NeedWorkImmediately                // some project is starved now
)

// String returns the seed's name of the urgency level.
func (u Urgency) String() string {
	switch u {
	case DontNeedWork:
		return "DONT_NEED_WORK"
	case NeedWork:
		return "NEED_WORK"
	case NeedWorkImmediately:
		return "NEED_WORK_IMMEDIATELY"
	}
	return fmt.Sprintf("Urgency(%d)", int(u))
}

// MinResults returns how many results project name may need at once to keep
// the scheduler from starving: ceil(slots × share / total share) (seed,
// "When to get work"). It is 0 for an unknown project.
func (s *Scheduler) MinResults(name string) int {
	p, ok := s.proj[name]
	if !ok {
		return 0
	}
	return int(math.Ceil(float64(s.slots) * p.share / s.totalShare()))
}

func (s *Scheduler) totalShare() float64 {
	t := 0.0
	for _, p := range s.proj {
		t += p.share
	}
	return t
}

// WorkRequest is the seed's compute_work_request. queued maps a project to
// the estimated remaining CPU time of each of its runnable results, in
// order of increasing deadline (absent means none). period is the
// connection period T and activeFrac the fraction of wall time the client
// runs, in (0, 1].
//
// For each project P, avg_proc_rate(P) = share/total share × slots ×
// activeFrac CPU seconds per wall second, and the time to starvation S is
// ETTPRC(P, MinResults(P)-1): the CPU time of all but its MinResults(P)-1
// latest-deadline results, divided by that rate. The urgency is
// NeedWorkImmediately if some S is zero, NeedWork if some S < T, else
// DontNeedWork. P's request is max(0, (2T - S) × rate) of CPU time, so
// that starvation moves out to between T and 2T; all requests are zero if
// the urgency is DontNeedWork.
func (s *Scheduler) WorkRequest(queued map[string][]time.Duration, period time.Duration, activeFrac float64) (Urgency, map[string]time.Duration, error) {
	if period <= 0 {
		return 0, nil, fmt.Errorf("sched: connection period %v is not positive", period)
	}
	if !(activeFrac > 0 && activeFrac <= 1) {
		return 0, nil, fmt.Errorf("sched: active fraction %v is not in (0, 1]", activeFrac)
	}
	for name, rs := range queued {
		if _, ok := s.proj[name]; !ok {
			return 0, nil, fmt.Errorf("sched: work queue for unknown project %q", name)
		}
		for _, r := range rs {
			if r < 0 {
				return 0, nil, fmt.Errorf("sched: project %q: negative cpu estimate %v", name, r)
			}
		}
	}
	t := period.Seconds()
	total := s.totalShare()
	urgency := DontNeedWork
	req := make(map[string]time.Duration, len(s.names))
	for _, name := range s.names {
		rate := s.proj[name].share / total * float64(s.slots) * activeFrac
		rs := queued[name]
		keep := max(0, len(rs)-(s.MinResults(name)-1)) // skip the latest deadlines
		cpu := 0.0
		for _, r := range rs[:keep] {
			cpu += r.Seconds()
		}
		starve := cpu / rate
		if starve < t {
			if starve == 0 {
				urgency = NeedWorkImmediately
			} else {
				urgency = max(urgency, NeedWork)
			}
		}
		req[name] = seconds(max(0, (2*t-starve)*rate))
	}
	if urgency == DontNeedWork {
		for name := range req {
			req[name] = 0
		}
	}
	return urgency, req, nil
}
