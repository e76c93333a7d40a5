package bench

import (
	"math/rand/v2"
	"time"
)

// sampleCap is how many durations a durationSample keeps: 65,536 × 8
// bytes, so a run's bookkeeping stays flat however many jobs it runs.
const sampleCap = 1 << 16

// durationSample is a uniform sample of at most sampleCap of the
// durations added (reservoir sampling, Algorithm R, seeded), with the
// true count and the exact maximum. Its quantiles are exact up to
// sampleCap durations and sampled beyond.
type durationSample struct {
	kept []time.Duration
	n    int
	max  time.Duration
	rng  *rand.Rand
}

// newDurationSample returns an empty sample whose choices follow seed.
func newDurationSample(seed uint64) *durationSample {
	return &durationSample{rng: rand.New(rand.NewPCG(seed, 0x5a3d1e))}
}

// add counts d and keeps it with probability sampleCap/n.
func (s *durationSample) add(d time.Duration) {
	s.n++
	s.max = max(s.max, d)
	if len(s.kept) < sampleCap {
		s.kept = append(s.kept, d)
		return
	}
	if i := s.rng.IntN(s.n); i < sampleCap {
		s.kept[i] = d
	}
}

// quantiles are the sample's median and 99th percentile, with the count
// and maximum of every duration added.
func (s *durationSample) quantiles() Quantiles {
	q := quantiles(s.kept)
	if s.n > 0 {
		q.N, q.Max = s.n, float64(s.max)/1e6
	}
	return q
}
