package client

import (
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// claimWindow is how many won claims' durations the client keeps for its
// latency quantiles: the most recent ones.
const claimWindow = 1024

// durationRing holds the most recent durations added, claimWindow at most;
// the Client owns it under its mutex.
type durationRing struct {
	d    []time.Duration
	next int // where the next duration goes once the ring is full
}

// add records d, replacing the oldest duration once the ring is full.
func (r *durationRing) add(d time.Duration) {
	if len(r.d) < claimWindow {
		r.d = append(r.d, d)
		return
	}
	r.d[r.next] = d
	r.next = (r.next + 1) % claimWindow
}

// sorted returns a sorted copy of the durations held.
func (r *durationRing) sorted() []time.Duration {
	s := slices.Clone(r.d)
	slices.Sort(s)
	return s
}

// quantile returns the nearest-rank q-quantile (0 < q ≤ 1) of sorted, a
// sorted slice of durations: its value at index ceil(q·n)−1; 0 when
// sorted is empty.
func quantile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(n))) - 1
	return sorted[max(0, min(i, n-1))]
}

// claimBuckets are the bounds of up_client_claim_seconds, in seconds:
// 1 ms to 30 s.
var claimBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// newClaimHistogram returns the histogram of won claims' durations
// (up_client_claim_seconds), in seconds.
func newClaimHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "up_client_claim_seconds",
		Help:    "Seconds each won claim took, from the start of the claim to its win (claim requests and confirms).",
		Buckets: claimBuckets,
	})
}

// timeClaim records took, the duration of a claim the client won, in the
// window of recent claims and the claim histogram.
func (c *Client) timeClaim(took time.Duration) {
	c.mu.Lock()
	c.claimTimes.add(took)
	c.mu.Unlock()
	if c.claimHist != nil {
		c.claimHist.Observe(took.Seconds())
	}
}

// claimLatency fills st's claim latency figures from the window of recent
// won claims. The caller holds c.mu.
func (c *Client) claimLatency(st *Status) {
	s := c.claimTimes.sorted()
	st.ClaimsTimed = len(s)
	st.ClaimP50 = quantile(s, 0.50).Seconds()
	st.ClaimP99 = quantile(s, 0.99).Seconds()
}
