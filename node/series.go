package node

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
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

// sample is a recorded step: its time, what it served, and that encoded
// as JSON but for the age (from the first field's key on, closing brace
// included), so an answer encodes no map.
type sample struct {
	at time.Time
	Sample
	tail []byte
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
	size     int      // bytes of the samples' tails
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
		JobsHeld: r.JobsHeld, IndexEntries: r.IndexEntries, Load: round(r.Load, 1e4),
		Moves: r.Moves, Connections: r.Connections, RPC: map[string]float64{},
	}}
	if dt := now.Sub(s.prevAt).Seconds(); !s.prevAt.IsZero() && dt > 0 {
		for proto, n := range r.RPC {
			prev := s.prevRPC[proto]
			if r.Instance != s.prevInst || n < prev {
				prev = 0 // the counters restarted
			}
			if d := n - prev; d > 0 {
				smp.RPC[proto] = max(round(d/dt, 1e3), 1e-3)
			}
		}
	}
	s.prevAt, s.prevInst, s.prevRPC = now, r.Instance, maps.Clone(r.RPC)
	smp.tail = encodeTail(smp.Sample)
	s.size += len(smp.tail)
	if len(s.ring) < s.max {
		s.ring = append(s.ring, smp)
		return
	}
	s.size -= len(s.ring[s.head].tail)
	s.ring[s.head] = smp
	s.head = (s.head + 1) % s.max
}

// Len is how many samples the sampler holds.
func (s *Sampler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ring)
}

// Series is the samples, oldest first, aged at now (to the
// millisecond). The rate maps are
// shared with the sampler's: do not modify them.
func (s *Sampler) Series(now time.Time) Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Series{Step: s.step.Seconds(), Samples: make([]Sample, 0, len(s.ring))}
	for i := range s.ring {
		smp := s.ring[(s.head+i)%len(s.ring)]
		smp.Age = round(now.Sub(smp.at).Seconds(), 1e3)
		out.Samples = append(out.Samples, smp.Sample)
	}
	return out
}

// round rounds v to a multiple of 1/scale.
func round(v, scale float64) float64 { return math.Round(v*scale) / scale }

// encodeTail is smp's JSON without its age: `"jobs_held":…}`.
func encodeTail(smp Sample) []byte {
	b, err := json.Marshal(smp)
	if err != nil { // a NaN or infinite load: served as 0
		smp.Load = 0
		b, _ = json.Marshal(smp)
	}
	// Age is the first field: drop `{"age_s":0,`.
	const head = `{"age_s":0,`
	return b[len(head):]
}

// AppendJSON appends the Series at now, as JSON, to dst: what
// json.Marshal(s.Series(now)) gives, ages rounded to the millisecond,
// without encoding a map.
func (s *Sampler) AppendJSON(dst []byte, now time.Time) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst = slices.Grow(dst, s.size+len(s.ring)*24+64)
	dst = append(dst, `{"step_s":`...)
	dst = strconv.AppendFloat(dst, s.step.Seconds(), 'f', -1, 64)
	dst = append(dst, `,"samples":[`...)
	for i := range s.ring {
		smp := &s.ring[(s.head+i)%len(s.ring)]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"age_s":`...)
		dst = strconv.AppendFloat(dst, round(now.Sub(smp.at).Seconds(), 1e3), 'f', -1, 64)
		dst = append(dst, ',')
		dst = append(dst, smp.tail...)
	}
	return append(dst, "]}\n"...)
}
