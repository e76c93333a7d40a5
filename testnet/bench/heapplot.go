package bench

import (
	"errors"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PlotHeap writes the run's heap curve as a PNG to path: the live heap
// (MiB) against the jobs harvested, so growth per job reads off the
// slope whatever the run's speed.
func (r *Report) PlotHeap(path string) error {
	if len(r.HeapCurve) < 2 {
		return errors.New("plot heap: fewer than two samples (the run was shorter than 4 s)")
	}
	pts := make(plotter.XYs, len(r.HeapCurve))
	for i, s := range r.HeapCurve {
		pts[i].X, pts[i].Y = float64(s.Harvested), s.LiveMiB
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("live heap, %d nodes r=%d, %d jobs (%.0f jobs/s)", r.Nodes, r.R, r.Jobs, r.JobsPerSec)
	p.X.Label.Text = "jobs harvested"
	p.Y.Label.Text = "live heap (MiB, at the last GC)"
	p.Y.Min = 0
	line, err := plotter.NewLine(pts)
	if err != nil {
		return fmt.Errorf("plot heap: %w", err)
	}
	p.Add(line, plotter.NewGrid())
	if err := p.Save(8*vg.Inch, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("plot heap: %w", err)
	}
	return nil
}
