package sim

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colours of the thesis figures: jobs green, index entries blue, RPC red.
var (
	green  = color.RGBA{G: 140, A: 255}
	blue   = color.RGBA{B: 220, A: 255}
	red    = color.RGBA{R: 210, A: 255}
	orange = color.RGBA{R: 230, G: 130, A: 255}
	grey   = color.RGBA{R: 90, G: 90, B: 90, A: 255}
)

const maxPoints = 1500

// series downsamples a row field to at most maxPoints points, taking the
// maximum (peak true) or the mean of each bucket; x in hours.
func series(rows []Row, f func(Row) float64, peak bool) plotter.XYs {
	if len(rows) == 0 {
		return nil
	}
	step := (len(rows) + maxPoints - 1) / maxPoints
	var out plotter.XYs
	for i := 0; i < len(rows); i += step {
		end := min(i+step, len(rows))
		var v float64
		for _, r := range rows[i:end] {
			if peak {
				v = max(v, f(r))
			} else {
				v += f(r)
			}
		}
		if !peak {
			v /= float64(end - i)
		}
		out = append(out, plotter.XY{X: float64(rows[end-1].T) / 3600, Y: v})
	}
	return out
}

type curve struct {
	name   string
	f      func(Row) float64
	peak   bool
	c      color.Color
	dashed bool
}

func linePlot(title, ylabel string, rows []Row, curves []curve) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (h)"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.X.Tick.Marker = roundTicks{target: 8}
	p.Y.Tick.Marker = roundTicks{target: 6}
	for _, c := range curves {
		l, err := plotter.NewLine(series(rows, c.f, c.peak))
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", c.name, err)
		}
		l.Color = c.c
		l.Width = vg.Points(1)
		if c.dashed {
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(c.name, l)
	}
	return p, nil
}

// Plot writes the run's figures into dir, laid out like the thesis':
// overview.png (Figures 4.1, 4.2, 4.5–4.8, 4.13: job and index load per
// node and the busiest node's RPC/s), rpc.png (the RPC close-up and
// Figures 4.3 middle/right, 4.9, 4.11, 4.14: without index nodes, without
// lookups) and bars.png (Figures 4.3 left, 4.4, 4.10, 4.12: the busiest
// nodes' lifetime average RPC/s).
func (s *Sim) Plot(dir string) error {
	rows := s.rows
	title := fmt.Sprintf("%s, %d nodes", s.c.Name, s.c.Nodes)
	p, err := linePlot(title+": load", "jobs, index entries, RPC/s", rows, []curve{
		{"max RPC/s", func(r Row) float64 { return r.RPCMax }, true, red, false},
		{"jobs, busiest node", func(r Row) float64 { return r.JobsMax }, true, green, false},
		{"jobs, mean", func(r Row) float64 { return r.JobsMean }, false, green, true},
		{"index entries, busiest node", func(r Row) float64 { return r.IndexMax }, true, blue, false},
		{"index entries, mean of index nodes", func(r Row) float64 { return r.IndexMean }, false, blue, true},
	})
	if err != nil {
		return err
	}
	if err := savePlot(p, 10*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, "overview.png")); err != nil {
		return fmt.Errorf("save overview: %w", err)
	}
	p, err = linePlot(title+": RPC load", "RPC/s", rows, []curve{
		{"max, all nodes", func(r Row) float64 { return r.RPCMax }, true, red, false},
		{"max, without index nodes", func(r Row) float64 { return r.RPCMaxNoIndex }, true, orange, false},
		{"max, without index nodes and lookups", func(r Row) float64 { return r.RPCMaxNoIndexNoLookup }, true, green, false},
		{"max, without lookups", func(r Row) float64 { return r.RPCMaxNoLookup }, true, blue, true},
		{"mean", func(r Row) float64 { return r.RPCMean }, false, grey, false},
	})
	if err != nil {
		return err
	}
	if err := savePlot(p, 10*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, "rpc.png")); err != nil {
		return fmt.Errorf("save rpc: %w", err)
	}
	return s.plotBars(title, filepath.Join(dir, "bars.png"))
}

// savePlot writes p as a PNG of w by h with its legend in a column to the
// right of the axes, where it cannot cover the data.
func savePlot(p *plot.Plot, w, h vg.Length, path string) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	legend := p.Legend
	p.Legend = plot.NewLegend() // drawn outside, below the title
	defer func() { p.Legend = legend }()
	pad := vg.Points(10)
	lw := legend.Rectangle(dc).Size().X + 2*pad
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	legend.Left, legend.Top = true, true
	// Below the title, level with the top of the axes.
	top := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding + pad
	legend.Draw(draw.Crop(dc, w-lw+pad, 0, 0, -top))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

func (s *Sim) plotBars(title, path string) error {
	loads := s.NodeLoads()
	loads = loads[:min(16, len(loads))]
	if len(loads) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = title + ": lifetime average RPC/s, busiest nodes"
	p.Y.Label.Text = "RPC/s"
	var all, noLk plotter.Values
	var names []string
	for i, l := range loads {
		all = append(all, l.Avg)
		noLk = append(noLk, l.Avg-l.ByKind["lookup"])
		names = append(names, strconv.Itoa(i+1))
	}
	w := vg.Points(12)
	b1, err := plotter.NewBarChart(all, w)
	if err != nil {
		return fmt.Errorf("bars: %w", err)
	}
	b1.Color = red
	b1.Offset = -w / 2
	b2, err := plotter.NewBarChart(noLk, w)
	if err != nil {
		return fmt.Errorf("bars: %w", err)
	}
	b2.Color = green
	b2.Offset = w / 2
	p.Add(b1, b2)
	p.Legend.Add("all RPCs", b1)
	p.Legend.Add("without lookups", b2)
	p.Y.Tick.Marker = roundTicks{target: 6}
	p.NominalX(names...)
	if err := savePlot(p, 9.5*vg.Inch, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("save bars: %w", err)
	}
	return nil
}
