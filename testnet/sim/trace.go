package sim

import (
	"math"
	"time"
)

// LHC@home-like trace parameters (thesis 1.2.2, 4.5).
const (
	traceJobsPerDay = 700_887.0 / 37 // jobs submitted per day in the first 37 days
	traceBatchGap   = 24 * time.Hour // mean time between batches (exponential)
	traceBatchSigma = 1.0            // lognormal σ of batch sizes
	traceQuietShare = 0.54           // the first 20 of 37 days are quiet ...
	traceQuietScale = 0.4            // ... with batches this much smaller,
	traceBusyScale  = 1.7            // and larger afterwards (mean kept)
	traceShort      = 0.92           // share of short jobs
	traceShortMean  = 30 * time.Minute
	traceLongMean   = 195 * time.Minute // 3 h 15 min
	traceShortTF    = 6 * time.Hour     // T_finish of a short job
	traceLongTF     = 24 * time.Hour    // T_finish of a long job
	traceTimeout    = 0.113             // clients that never report
	traceError      = 0.056             // clients that fail and release
)

// traceGen synthesises the LHC@home-like workload: batches of jobs arrive
// as a Poisson process, each drained into the pool at Rate jobs/s at most;
// a closed population of clients polls for work.
type traceGen struct {
	s       *Sim
	perDay  float64
	backlog int
	busy    bool
}

func newTrace(s *Sim) *traceGen {
	per := traceJobsPerDay
	if s.c.Jobs > 0 {
		per = float64(s.c.Jobs) / s.c.Duration.Hours() * 24
	}
	return &traceGen{s: s, perDay: per}
}

func (t *traceGen) start() {
	s := t.s
	t.nextBatch(0)
	for range s.c.Clients {
		s.e.at(s.e.uniform(0, ms(s.c.ClientPoll)), event{kind: evClaimStart, att: s.newAttempt(true)})
	}
}

func (t *traceGen) nextBatch(at int64) {
	s := t.s
	s.e.at(at, event{kind: evSubmit, arg: 2})
}

// batch: a batch arrives; its size is lognormal with the mean that gives
// perDay jobs a day, smaller in the quiet first part of the trace.
func (t *traceGen) batch() {
	s := t.s
	mean := t.perDay * traceBatchGap.Hours() / 24
	scale := traceBusyScale
	if float64(s.e.now) < traceQuietShare*float64(ms(s.c.Duration)) {
		scale = traceQuietScale
	}
	median := mean * scale / math.Exp(traceBatchSigma*traceBatchSigma/2)
	n := int(median * math.Exp(traceBatchSigma*s.wl.NormFloat64()))
	t.backlog += max(n, 1)
	if next := s.e.now + t.exp(ms(traceBatchGap)); next < ms(s.c.Duration) {
		t.nextBatch(next)
	}
	if !t.busy {
		t.busy = true
		s.e.after(0, event{kind: evSubmit})
	}
}

// submit drains the backlog at Rate jobs/s.
func (t *traceGen) submit() {
	s := t.s
	if t.backlog == 0 {
		t.busy = false
		return
	}
	t.backlog--
	run, tf := t.exp(ms(traceShortMean)), ms(traceShortTF)
	if s.wl.Float64() >= traceShort {
		run, tf = t.exp(ms(traceLongMean)), ms(traceLongTF)
	}
	s.sendJob(s.newJob(max(run, 1000), tf))
	s.e.after(int64(math.Ceil(1000/s.c.Rate)), event{kind: evSubmit})
}

// exp is an exponential draw of the given mean (ms) from the workload's
// own stream.
func (t *traceGen) exp(mean int64) int64 {
	return int64(t.s.wl.ExpFloat64() * float64(mean))
}

// fate draws how one execution of a job ends (thesis 1.2.2: 11.3 % of
// workunits timed out, 5.6 % failed with a client error).
func (t *traceGen) fate() uint8 {
	switch u := t.s.e.rng.Float64(); {
	case u < traceTimeout:
		return fateTimeout
	case u < traceTimeout+traceError:
		return fateError
	}
	return fateOK
}
