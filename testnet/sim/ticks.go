package sim

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// roundTicks is a plot.Ticker that labels multiples of a round step of the
// axis unit (1, 2 or 5 × 10^k), about target of them over the range, with
// unlabelled minor ticks between: 0, 2, 4 h rather than 2.50, 7.50 h.
type roundTicks struct{ target int }

var _ plot.Ticker = roundTicks{}

// Ticks returns the ticks between lo and hi.
func (t roundTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	step, mant := roundStep((hi - lo) / float64(max(t.target, 1)))
	minor := step / 5
	if mant == 2 {
		minor = step / 4
	}
	decimals := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	var out []plot.Tick
	for k := math.Ceil(lo/minor - 1e-9); k*minor <= hi+minor*1e-9; k++ {
		v := k * minor
		tick := plot.Tick{Value: v}
		if r := v / step; math.Abs(r-math.Round(r)) < 1e-6 {
			scale := math.Pow10(decimals)
			v = math.Round(math.Round(r)*step*scale) / scale
			tick = plot.Tick{Value: v, Label: strconv.FormatFloat(v+0, 'f', -1, 64)}
		}
		out = append(out, tick)
	}
	return out
}

// roundStep returns the smallest 1, 2 or 5 × 10^k at least raw, and its
// mantissa (1, 2 or 5).
func roundStep(raw float64) (float64, int) {
	if !(raw > 0) || math.IsInf(raw, 0) {
		return 1, 1
	}
	mag := math.Pow10(int(math.Floor(math.Log10(raw))))
	for _, m := range []int{1, 2, 5} {
		if s := float64(m) * mag; s >= raw*(1-1e-9) {
			return s, m
		}
	}
	return 10 * mag, 1
}
