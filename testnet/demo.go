package testnet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
)

// DemoOptions configure RunDemo. Zero values take the defaults.
type DemoOptions struct {
	Nodes, Clients int // default 8 and 4
	Tiles          int // tiles per side of the image; default 8
	TileSize       int // pixels per tile side; default 64
	Copies         int // redundant copies per tile; default 2
	Dir            string
	Image          string   // where to write the assembled PNG; default Dir/mandelbrot.png
	Launcher       []string // how clients run applications: the up binary's "app exec"
	LauncherEnv    []string // extra environment for the launcher
	Seed           uint64
	Timeout        time.Duration // default 2 min
	Log            io.Writer     // progress lines; nil: none
}

// DemoReport is what a demo run measured.
type DemoReport struct {
	Nodes, Clients, Units, Jobs int
	Elapsed                     time.Duration
	RPCsPerJob                  float64 // requests served by all nodes, per job
	Image                       string
	Credit                      []project.Credit
}

// lineLogger returns a printf that writes one line to w, or nothing when
// w is nil (progress lines of the demo and the bench).
func lineLogger(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format+"\n", args...)
		}
	}
}

// RunDemo runs the whole system in one process: a test CA, nodes on
// loopback TCP, a project and worker clients; the project submits the
// tiles of a Mandelbrot image (built-in application) with redundant
// copies, the clients compute them, the project harvests, validates,
// grants credit and assembles the image.
func RunDemo(ctx context.Context, o DemoOptions) (DemoReport, error) {
	if o.Nodes == 0 {
		o.Nodes = 8
	}
	if o.Clients == 0 {
		o.Clients = 4
	}
	if o.Tiles == 0 {
		o.Tiles = 8
	}
	if o.TileSize == 0 {
		o.TileSize = 64
	}
	if o.Copies == 0 {
		o.Copies = 2
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Image == "" {
		o.Image = filepath.Join(o.Dir, "mandelbrot.png")
	}
	logf := lineLogger(o.Log)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	rep := DemoReport{Nodes: o.Nodes, Clients: o.Clients, Units: o.Tiles * o.Tiles, Jobs: o.Tiles * o.Tiles * o.Copies, Image: o.Image}
	net, err := Start(ctx, Options{Nodes: o.Nodes, Transport: TCP, Dir: o.Dir, Seed: o.Seed, PoolLoops: true})
	if err != nil {
		return rep, err
	}
	defer net.Close()
	logf("%d nodes up on loopback TCP in %s", o.Nodes, time.Since(start).Round(time.Millisecond))
	p, err := net.NewProject(ctx, "mandel")
	if err != nil {
		return rep, err
	}
	defer p.Agent().Close()
	ledger, err := project.OpenLedger(filepath.Join(o.Dir, "ledger.db"))
	if err != nil {
		return rep, err
	}
	defer ledger.Close()

	units := mandelbrotUnits(o.Tiles, o.TileSize)
	digest := sha256.Sum256(fmt.Appendf(nil, "mandelbrot %d %d", o.Tiles, o.TileSize))
	srep, err := p.SubmitUnits(ctx, ledger, units, o.Copies, digest[:], "demo", nil)
	if err != nil {
		return rep, err
	}
	if len(srep.Errors) > 0 {
		return rep, fmt.Errorf("submit: %w", srep.Errors[0])
	}
	logf("project submitted %d tiles × %d copies = %d jobs", len(units), o.Copies, srep.Submitted)

	runCtx, stopClients := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range o.Clients {
		a, err := net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("volunteer%d", i+1))
		if err != nil {
			stopClients()
			return rep, err
		}
		defer a.Close()
		r, err := runner.New(runner.Config{Launcher: o.Launcher, Env: o.LauncherEnv, WorkRoot: filepath.Join(o.Dir, fmt.Sprintf("work%d", i+1)),
			Allow: map[string][]string{"mandel": {"mandelbrot"}}})
		if err != nil {
			stopClients()
			return rep, err
		}
		c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "mandel", Share: 1}}, Runner: r, Slots: 2,
			BackoffMin: 20 * time.Millisecond, BackoffMax: 500 * time.Millisecond, Seed: o.Seed + uint64(i),
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			stopClients()
			return rep, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Run(runCtx)
		}()
	}
	logf("%d volunteer clients working", o.Clients)
	defer func() { stopClients(); wg.Wait() }()

	for {
		hrep, err := p.Harvest(ctx, ledger, project.HarvestOptions{}, nil)
		if err != nil {
			return rep, err
		}
		st, err := ledger.Stats(time.Now())
		if err != nil {
			return rep, err
		}
		if hrep.Recorded > 0 {
			logf("harvest: %d new results, %d of %d tiles validated", hrep.Recorded, st.Units[project.UnitValid], len(units))
		}
		if st.Units[project.UnitValid] == len(units) {
			rep.Credit = st.Credit
			break
		}
		select {
		case <-ctx.Done():
			return rep, fmt.Errorf("demo: %d of %d tiles validated before the timeout", st.Units[project.UnitValid], len(units))
		case <-time.After(300 * time.Millisecond):
		}
	}
	rep.Elapsed = time.Since(start)
	var served float64
	for _, nd := range net.Live() {
		served += overlay.SumCounter(nd.Endpoint().Metrics().RPCReceived, "", "")
	}
	rep.RPCsPerJob = served / float64(rep.Jobs)
	if err := assemble(ledger, o.Tiles, o.TileSize, o.Image); err != nil {
		return rep, err
	}
	return rep, nil
}

// mandelbrotUnits cuts the view [-2.2, 0.8] × [-1.5, 1.5] into tiles.
func mandelbrotUnits(tiles, size int) []project.Unit {
	const x0, y0, span = -2.2, -1.5, 3.0
	step := span / float64(tiles)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var out []project.Unit
	for ty := range tiles {
		for tx := range tiles {
			ax, ay := x0+float64(tx)*step, y0+float64(ty)*step
			out = append(out, project.Unit{
				App:      "mandelbrot",
				Args:     []string{f(ax), f(ay), f(ax + step), f(ay + step), strconv.Itoa(size), strconv.Itoa(size), "256"},
				Keywords: []string{"mandel"}, Resources: []string{"mem:small"}, TFinish: 5 * time.Minute,
			})
		}
	}
	return out
}

// assemble draws every unit's canonical tile into one PNG.
func assemble(l *project.Ledger, tiles, size int, path string) error {
	img := image.NewGray(image.Rect(0, 0, tiles*size, tiles*size))
	var idxs []int
	err := l.EachResult(func(r project.Result, unit int, canonical string) error {
		if r.CID != canonical {
			return nil
		}
		tile, err := png.Decode(bytes.NewReader(r.Output))
		if err != nil {
			return fmt.Errorf("tile %d: %w", unit, err)
		}
		tx, ty := unit%tiles, unit/tiles
		draw.Draw(img, image.Rect(tx*size, (tiles-1-ty)*size, (tx+1)*size, (tiles-ty)*size), tile, image.Point{}, draw.Src)
		idxs = append(idxs, unit)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Ints(idxs)
	if len(idxs) != tiles*tiles {
		return fmt.Errorf("assemble: %d of %d tiles", len(idxs), tiles*tiles)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return err
	}
	return writeFile(path, buf.Bytes())
}

func writeFile(path string, b []byte) error { return keystore.WriteFileAtomic(path, b, 0o644) }
