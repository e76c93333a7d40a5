package node

import (
	"maps"
	"sync"
	"time"
)

// DefaultSeriesStep is how often a node records a sample of its state for
// GET /api/series when Config.SeriesStep is zero: 5 s.
const DefaultSeriesStep = 5 * time.Second

// MaxSamples is the most samples a Sampler keeps (an hour at the default
// step); the oldest is dropped for a new one.
const MaxSamples = 720

// Reading is what a node reads of itself at one step.
type Reading struct {
	JobsHeld     int     // job replicas held
	IndexEntries int     // index entries held
	Load         float64 // load balancing's load figure (loadbalance.Load.Value)
	Moves        int     // position changes since the process started
	Connections  int     // open libp2p connections
	// Instance names the network presence whose counters RPC holds (the
	// peer ID): a move restarts them at zero under a new one.
	Instance string
	// RPC are the requests served since the instance started, by protocol
	// (cumulative counts, not rates).
	RPC map[string]float64
}

// Sample is one step of the series as served: its age on the node's clock
// at answer time and the rates of requests served during the step.
type Sample struct {
	Age          float64            `json:"age_s"` // seconds before the answer
	JobsHeld     int                `json:"jobs_held"`
	IndexEntries int                `json:"index_entries"`
	Load         float64            `json:"load"`
	Moves        int                `json:"moves"`
	Connections  int                `json:"connections"`
	RPC          map[string]float64 `json:"rpc"` // requests/s served during the step, by protocol
}

// Series is the GET /api/series document, oldest sample first.
type Series struct {
	Step    float64  `json:"step_s"` // seconds between samples
	Samples []Sample `json:"samples"`
}

// sample is a recorded step: its time and what it served.
type sample struct {
	at time.Time
	Sample
}

// Sampler keeps a bounded time series of a node's readings: the caller
// steps it with the time and what it read; it turns cumulative request
// counts into rates. It starts no goroutine; its methods are safe for
// concurrent use.
type Sampler struct {
	step time.Duration
	max  int

	mu       sync.Mutex
	ring     []sample // ring buffer of at most max samples
	head     int      // index of the oldest sample once the ring is full
	prevAt   time.Time
	prevInst string
	prevRPC  map[string]float64
}

// NewSampler is a sampler for samples every step (DefaultSeriesStep when
// zero or less) keeping at most max (MaxSamples when zero or less).
func NewSampler(step time.Duration, max int) *Sampler {
	if step <= 0 {
		step = DefaultSeriesStep
	}
	if max <= 0 {
		max = MaxSamples
	}
	return &Sampler{step: step, max: max}
}

// Step is the time between two samples.
func (s *Sampler) Step() time.Duration { return s.step }

// Add records r as read at now. The request rates are the counts' growth
// since the previous reading over the time between them; the first
// reading, and one at or before the previous, has none. A counter that
// went back (or a new instance) counts from zero.
func (s *Sampler) Add(now time.Time, r Reading) {
	s.mu.Lock()
	defer s.mu.Unlock()
	smp := sample{at: now, Sample: Sample{
		JobsHeld: r.JobsHeld, IndexEntries: r.IndexEntries, Load: r.Load,
		Moves: r.Moves, Connections: r.Connections, RPC: map[string]float64{},
	}}
	if dt := now.Sub(s.prevAt).Seconds(); !s.prevAt.IsZero() && dt > 0 {
		for proto, n := range r.RPC {
			prev := s.prevRPC[proto]
			if r.Instance != s.prevInst || n < prev {
				prev = 0 // the counters restarted
			}
			if d := n - prev; d > 0 {
				smp.RPC[proto] = d / dt
			}
		}
	}
	s.prevAt, s.prevInst, s.prevRPC = now, r.Instance, maps.Clone(r.RPC)
	if len(s.ring) < s.max {
		s.ring = append(s.ring, smp)
		return
	}
	s.ring[s.head] = smp
	s.head = (s.head + 1) % s.max
}

// Len is how many samples the sampler holds.
func (s *Sampler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ring)
}

// Series is the samples, oldest first, aged at now. The rate maps are
// shared with the sampler's: do not modify them.
func (s *Sampler) Series(now time.Time) Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Series{Step: s.step.Seconds(), Samples: make([]Sample, 0, len(s.ring))}
	for i := range s.ring {
		smp := s.ring[(s.head+i)%len(s.ring)]
		smp.Age = now.Sub(smp.at).Seconds()
		out.Samples = append(out.Samples, smp.Sample)
	}
	return out
}
