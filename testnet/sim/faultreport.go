package sim

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WriteFaultReport writes dir/faults.md, a table of the runs under dir
// that have faults, and dir/faults.png, their figures against the share
// of Byzantine nodes (and faults-latency.png, the claim latency). It writes nothing when no run has faults.
func WriteFaultReport(dir string) error {
	runs, _, err := LoadSummaries(dir)
	if err != nil {
		return err
	}
	var fr []Summary
	for _, r := range runs {
		if r.Faults != nil {
			fr = append(fr, r)
		}
	}
	if len(fr) == 0 {
		return nil
	}
	slices.SortStableFunc(fr, func(a, b Summary) int { return cmp.Compare(a.Faults.Byzantine, b.Faults.Byzantine) })
	f, err := os.Create(filepath.Join(dir, "faults.md"))
	if err != nil {
		return fmt.Errorf("create fault report: %w", err)
	}
	if err := faultTable(f, fr); err != nil {
		f.Close()
		return fmt.Errorf("write fault report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close fault report: %w", err)
	}
	return plotFaults(fr, filepath.Join(dir, "faults.png"))
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// faultTable writes the runs' fault figures as a markdown table.
func faultTable(w io.Writer, runs []Summary) error {
	_, err := fmt.Fprint(w, "| run | nodes | jobs | Byzantine | behaviours | skewed (±) | jumping | jobs beyond f | lost (beyond f; swallowed) | resubmitted (given up) | double claims (beyond f) | unclaimable (beyond f) | claim p50 / p99 | forged states refused |\n"+
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		ff := r.Faults
		_, err = fmt.Fprintf(w, "| %s | %d | %d | %.0f %% | %s | %.0f %% (%.0f min) | %.0f %% | %d (%.2f %%) | %d (%d; %d) | %d (%d) | %d (%d) | %d (%d) | %.2f s / %.2f s | %d |\n",
			r.Name, r.Nodes, ff.Jobs, 100*ff.Byzantine, ff.Behaviours, 100*ff.Skewed, ff.SkewS/60, 100*ff.Jump,
			ff.BeyondF, pct(ff.BeyondF, ff.Jobs), ff.Lost, ff.LostBeyondF, ff.Swallowed, ff.Resubmitted, ff.GivenUp, ff.Doubles, ff.DoubleBeyondF,
			ff.Unclaimable, ff.UnclaimableBeyondF, ff.P50S, ff.P99S, ff.ForgedRefused)
		if err != nil {
			return err
		}
	}
	return nil
}

// plotFaults draws two panels: the share of jobs beyond f, lost,
// double-claimed, unclaimable and sent again through another first node
// (resubmitted) against the Byzantine share; and the
// claim latency's median and 99th percentile.
func plotFaults(runs []Summary, path string) error {
	shares := plot.New()
	shares.Title.Text = "Jobs, against the share of Byzantine nodes"
	shares.X.Label.Text = "Byzantine nodes (%)"
	shares.Y.Label.Text = "% of jobs"
	lat := plot.New()
	lat.Title.Text = "Claim latency"
	lat.X.Label.Text = "Byzantine nodes (%)"
	lat.Y.Label.Text = "seconds"
	type fig struct {
		name string
		f    func(*FaultFigures) float64
		p    *plot.Plot
	}
	figs := []fig{
		{"jobs beyond f", func(ff *FaultFigures) float64 { return pct(ff.BeyondF, ff.Jobs) }, shares},
		{"unclaimable", func(ff *FaultFigures) float64 { return pct(ff.Unclaimable, ff.Jobs) }, shares},
		{"lost", func(ff *FaultFigures) float64 { return pct(ff.Lost, ff.Jobs) }, shares},
		{"double claims", func(ff *FaultFigures) float64 { return pct(ff.Doubles, ff.Jobs) }, shares},
		{"resubmitted", func(ff *FaultFigures) float64 { return pct(ff.Resubmitted, ff.Jobs) }, shares},
		{"claim p50", func(ff *FaultFigures) float64 { return ff.P50S }, lat},
		{"claim p99", func(ff *FaultFigures) float64 { return ff.P99S }, lat},
	}
	colours := []color.Color{red, grey, green, orange, blue, blue, red}
	for i, g := range figs {
		var xy plotter.XYs
		for _, r := range runs {
			xy = append(xy, plotter.XY{X: 100 * r.Faults.Byzantine, Y: g.f(r.Faults)})
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", g.name, err)
		}
		l.Color, pts.Color = colours[i], colours[i]
		g.p.Add(l, pts)
		g.p.Legend.Add(g.name, l)
	}
	if err := savePlot(shares, 7*vg.Inch, 4*vg.Inch, path); err != nil {
		return err
	}
	return savePlot(lat, 6*vg.Inch, 4*vg.Inch, filepath.Join(filepath.Dir(path), "faults-latency.png"))
}
