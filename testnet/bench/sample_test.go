package bench

import (
	"testing"
	"time"
)

// TestDurationSampleStaysBounded: past sampleCap durations the sample
// keeps sampleCap, counts all and keeps the exact maximum, and its median
// stays near the true one (uniform durations 0..n ms).
func TestDurationSampleStaysBounded(t *testing.T) {
	const n = 4 * sampleCap
	s := newDurationSample(1)
	for i := range n {
		s.add(time.Duration((i*7919)%n) * time.Millisecond)
	}
	q := s.quantiles()
	if len(s.kept) != sampleCap {
		t.Fatalf("kept %d durations, want %d", len(s.kept), sampleCap)
	}
	if q.N != n || q.Max != float64(n-1) {
		t.Fatalf("N %d max %.0f ms, want %d and %d", q.N, q.Max, n, n-1)
	}
	if mid := float64(n) / 2; q.P50 < 0.97*mid || q.P50 > 1.03*mid {
		t.Fatalf("median %.0f ms, want within 3%% of %.0f", q.P50, mid)
	}
}

// TestDurationSampleExactWhenSmall: up to sampleCap durations, the
// quantiles are those of every duration.
func TestDurationSampleExactWhenSmall(t *testing.T) {
	s := newDurationSample(1)
	var all []time.Duration
	for i := range 1000 {
		d := time.Duration(1000-i) * time.Microsecond
		s.add(d)
		all = append(all, d)
	}
	if got, want := s.quantiles(), quantiles(all); got != want {
		t.Fatalf("quantiles %+v, want %+v", got, want)
	}
}
