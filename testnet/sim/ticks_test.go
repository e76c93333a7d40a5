package sim

import (
	"math"
	"strconv"
	"testing"
)

// TestPlotTicksRound: the plots' axes label round values of their unit,
// multiples of a 1, 2 or 5 × 10^k step, at least three of them, where
// gonum's default ticker chose 2.50, 7.50, 12.50 h or 3, 9, 15 h.
func TestPlotTicksRound(t *testing.T) {
	rows := []Row{{T: 0, RPCMax: 1}, {T: 57000, RPCMax: 25.3}}
	p, err := linePlot("t", "RPC/s", rows, []curve{{"max", func(r Row) float64 { return r.RPCMax }, true, red, false}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		axis   string
		lo, hi float64
		want   string // the labels, when given
	}{
		{"x", 0, 15.8, "0 2 4 6 8 10 12 14"},
		{"x", 0, 15, "0 2 4 6 8 10 12 14"},
		{"x", 0.5, 12.6, ""},
		{"x", 0, 2.2, "0 0.5 1 1.5 2"},
		{"y", 0, 25.3, "0 5 10 15 20 25"},
		{"y", 0, 0.37, "0 0.1 0.2 0.3"},
		{"y", 0, 3157, "0 1000 2000 3000"},
		{"y", -0.3, 0.3, "-0.3 -0.2 -0.1 0 0.1 0.2 0.3"},
		{"y", 0, 1e6, ""},
	} {
		marker := p.X.Tick.Marker
		if c.axis == "y" {
			marker = p.Y.Tick.Marker
		}
		var labels []float64
		got := ""
		for _, tk := range marker.Ticks(c.lo, c.hi) {
			if tk.Label == "" {
				continue
			}
			v, err := strconv.ParseFloat(tk.Label, 64)
			if err != nil || math.Abs(v-tk.Value) > 1e-9*math.Max(1, math.Abs(v)) {
				t.Errorf("%s axis %g..%g: tick %g labelled %q", c.axis, c.lo, c.hi, tk.Value, tk.Label)
			}
			labels = append(labels, v)
			if got != "" {
				got += " "
			}
			got += tk.Label
		}
		if c.want != "" && got != c.want {
			t.Errorf("%s axis %g..%g: labels %q, want %q", c.axis, c.lo, c.hi, got, c.want)
		}
		if len(labels) < 3 {
			t.Errorf("%s axis %g..%g: labels %q, want at least 3", c.axis, c.lo, c.hi, got)
			continue
		}
		step := labels[1] - labels[0]
		mant := step / math.Pow10(int(math.Floor(math.Log10(step)+1e-9)))
		if r := math.Round(mant); math.Abs(mant-r) > 1e-6 || (r != 1 && r != 2 && r != 5) {
			t.Errorf("%s axis %g..%g: labels %q step %g, not 1, 2 or 5 × 10^k", c.axis, c.lo, c.hi, got, step)
		}
		for _, v := range labels {
			if r := v / step; math.Abs(r-math.Round(r)) > 1e-6 {
				t.Errorf("%s axis %g..%g: label %g not a multiple of the step %g", c.axis, c.lo, c.hi, v, step)
			}
		}
	}
}
