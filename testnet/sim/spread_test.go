package sim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEvenMaxOverMean: the exact expectation against its limits and a
// seeded Monte Carlo estimate.
func TestEvenMaxOverMean(t *testing.T) {
	for _, tc := range []struct {
		n      int
		lambda float64
		lo, hi float64
	}{
		{1, 1, 1, 1},
		{2, 1, 1.2, 1.8},       // E[max of 2] > E[X]
		{1024, 1, 5, 7},        // the per-second floor at ~1 RPC/s per node
		{1024, 300, 1.1, 1.3},  // a 5-minute window at the same rate
		{10_000, 0.13, 20, 60}, // 10,000 nodes at 0.13 RPC/s
		{1024, 0, 0, 0},        // no load
		{1024, 1e4, 1.0, 1.05}, // large counts: near 1
	} {
		got := EvenMaxOverMean(tc.n, tc.lambda)
		if got < tc.lo || got > tc.hi || math.IsNaN(got) {
			t.Errorf("EvenMaxOverMean(%d, %g) = %.3f, want in [%g, %g]", tc.n, tc.lambda, got, tc.lo, tc.hi)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		n      int
		lambda float64
	}{{64, 1}, {256, 3}, {32, 20}} {
		const trials = 4000
		sum := 0.0
		for range trials {
			mx := 0
			for range tc.n {
				mx = max(mx, poisson(rng, tc.lambda))
			}
			sum += float64(mx)
		}
		mc := sum / trials / tc.lambda
		if got := EvenMaxOverMean(tc.n, tc.lambda); math.Abs(got-mc) > 0.03*mc {
			t.Errorf("EvenMaxOverMean(%d, %g) = %.3f, Monte Carlo %.3f", tc.n, tc.lambda, got, mc)
		}
	}
}

// poisson draws a Poisson(lambda) count by Knuth's product of uniforms.
func poisson(rng *rand.Rand, lambda float64) int {
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// TestWindowRatios: only windows ending in (from, to] and with load count.
func TestWindowRatios(t *testing.T) {
	ws := []window{{300, 10, 5}, {600, 9, 3}, {900, 4, 0}, {1200, 8, 4}}
	got := windowRatios(ws, 300, 1200)
	if len(got) != 2 || got[0] != 3 || got[1] != 2 {
		t.Fatalf("windowRatios = %v, want [3 2]", got)
	}
}
