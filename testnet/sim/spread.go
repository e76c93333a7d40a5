package sim

import "math"

// windowRatios returns busiest/mean of the load windows ending in
// (from, to] seconds, in time order.
func windowRatios(ws []window, from, to int64) []float64 {
	var out []float64
	for _, w := range ws {
		if w.end > from && w.end <= to && w.mean > 0 {
			out = append(out, w.max/w.mean)
		}
	}
	return out
}

// EvenMaxOverMean is the busiest/mean ratio a perfectly even load shows
// from counting noise alone: E[max of n independent Poisson(lambda)
// counts] / lambda. With n = 1,024 nodes at lambda = 1 RPC per node per
// second it is about 6: no balancing can bring a per-second busiest/mean
// below it. It returns 0 for lambda <= 0 and 1 for n <= 1.
func EvenMaxOverMean(n int, lambda float64) float64 {
	if lambda <= 0 {
		return 0
	}
	if n <= 1 {
		return 1
	}
	// E[max] = sum over x >= 0 of P(max > x) = sum of 1 - F(x)^n.
	hi := int(math.Ceil(lambda + 20*math.Sqrt(lambda) + 40))
	var cdf, exp float64
	logL := math.Log(lambda)
	for x := 0; x <= hi; x++ {
		lg, _ := math.Lgamma(float64(x) + 1)
		cdf += math.Exp(-lambda + float64(x)*logL - lg)
		tail := -math.Expm1(float64(n) * math.Log1p(-math.Min(1-cdf, 1)))
		if cdf >= 1 {
			break
		}
		exp += tail
	}
	return exp / lambda
}
