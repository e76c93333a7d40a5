package demo

import (
	"bytes"
	"context"
	"crypto/ed25519"
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

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/apps/wasm"
	"github.com/up-pool/up/blob/cache"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/creditclient"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/sandbox"
	"github.com/up-pool/up/testnet"
)

// Options configure Run. Zero values take the defaults.
type Options struct {
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

// Report is what a demo run measured.
type Report struct {
	Nodes, Clients, Units, Jobs int
	Elapsed                     time.Duration
	RPCsPerJob                  float64 // requests served by all nodes, per job
	Image                       string
	Credit                      []project.Credit
	// Receipts is each volunteer's credit as anyone can check it: the
	// receipts the project signed, gathered from the volunteer's credit
	// nodes and verified (creditclient.Show).
	Receipts []VerifiedCredit
	// Blobs is what uploading the WebAssembly module did: its size
	// (Bytes), what the project sent (Uploaded: once, not once per
	// replica) and r.
	Blobs project.BlobReport
}

// VerifiedCredit is one volunteer's credit gathered from the overlay.
type VerifiedCredit struct {
	Client   string
	Total    uint64 // credit summed from the verified receipts
	Nodes    int    // its credit nodes that answered
	Rejected int    // receipts that did not verify
}

// Run runs the whole system in one process: a test CA, nodes on
// loopback TCP, a project and worker clients. The project uploads the
// built-in applications' WebAssembly module (apps/wasm.Builtin) into the
// overlay once, submits the tiles of a Mandelbrot image with redundant
// copies, and goes offline; the clients fetch the module from the nodes
// and compute the tiles in the sandbox; the project, started again,
// harvests, validates, grants credit and assembles the image.
func Run(ctx context.Context, o Options) (Report, error) {
	o.defaults()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	rep := Report{Nodes: o.Nodes, Clients: o.Clients, Units: o.Tiles * o.Tiles, Jobs: o.Tiles * o.Tiles * o.Copies, Image: o.Image}
	d := &demoRun{o: o, logf: testnet.LineLogger(o.Log)}
	defer d.tearDown()
	if err := d.setUp(ctx, start); err != nil {
		return rep, err
	}
	if err := d.submit(ctx); err != nil {
		return rep, err
	}
	rep.Blobs = d.blobs
	id := d.p.Agent().Identity()
	d.closeProject()
	d.logf("project offline")
	runCtx, stopClients := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if err := d.startVolunteers(ctx, runCtx, &wg); err != nil {
		stopClients()
		return rep, err
	}
	d.logf("%d volunteer clients working", o.Clients)
	defer func() { stopClients(); wg.Wait() }()
	if err := d.awaitResults(ctx, rep.Jobs); err != nil {
		return rep, err
	}
	var err error
	if d.p, err = d.net.ReopenProject(ctx, id); err != nil {
		return rep, err
	}
	d.logf("project back online")
	credit, err := d.harvestAll(ctx)
	if err != nil {
		return rep, err
	}
	rep.Credit = credit
	if rep.Receipts, err = d.gatherCredit(ctx); err != nil {
		return rep, err
	}
	rep.Elapsed = time.Since(start)
	rep.RPCsPerJob = d.served() / float64(rep.Jobs)
	if err := assemble(d.ledger, o.Tiles, o.TileSize, o.Image); err != nil {
		return rep, err
	}
	return rep, nil
}

// defaults fills the zero options.
func (o *Options) defaults() {
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
}

// demoRun is one Run's shared state: its options, the parties it
// started and the tiles the project submitted.
type demoRun struct {
	o    Options
	logf func(format string, args ...any)
	// closers close what the run set up, in the order it was set up;
	// tearDown runs them the last first.
	closers []func()

	net     *testnet.Network
	p       *project.Project // nil while the project is offline
	ledger  *project.Ledger
	units   []project.Unit
	blobs   project.BlobReport
	clients []*client.Client
	// volunteers are the clients' agents, whose credit the run gathers.
	volunteers []*agent.Agent
}

// closeProject stops the project's process (its agent), if running.
func (d *demoRun) closeProject() {
	if d.p != nil {
		d.p.Agent().Close()
		d.p = nil
	}
}

// onTearDown has tearDown call closer, before the closers registered
// earlier (as a deferred call would be).
func (d *demoRun) onTearDown(closer func()) { d.closers = append(d.closers, closer) }

// tearDown closes what the run set up, the last first.
func (d *demoRun) tearDown() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}

// setUp starts the nodes on loopback TCP (started at start), the project
// and its ledger.
func (d *demoRun) setUp(ctx context.Context, start time.Time) error {
	o := d.o
	net, err := testnet.Start(ctx, testnet.Options{Nodes: o.Nodes, Transport: testnet.TCP, Dir: o.Dir, Seed: o.Seed, PoolLoops: true})
	if err != nil {
		return err
	}
	d.net = net
	d.onTearDown(func() { net.Close() })
	d.logf("%d nodes up on loopback TCP in %s", o.Nodes, time.Since(start).Round(time.Millisecond))
	if d.p, err = net.NewProject(ctx, "mandel"); err != nil {
		return err
	}
	d.onTearDown(d.closeProject)
	if d.ledger, err = project.OpenLedger(filepath.Join(o.Dir, "ledger.db")); err != nil {
		return err
	}
	d.onTearDown(func() { d.ledger.Close() })
	return nil
}

// moduleFile is the name, in the run's directory, of the module the
// project uploads.
const moduleFile = "builtin.wasm"

// submit has the project upload the module and submit every tile, with
// the options' copies.
func (d *demoRun) submit(ctx context.Context) error {
	o := d.o
	d.units = mandelbrotUnits(o.Tiles, o.TileSize)
	if o.Copies >= 2 {
		// As a job file's copies ≥ 2 would: each copy commits to its tile
		// before it reveals it (commit–reveal, job.Spec.Commit).
		for i := range d.units {
			d.units[i].Commit = uint16(project.Quorum(o.Copies))
		}
	}
	if err := writeFile(filepath.Join(o.Dir, moduleFile), wasm.Builtin); err != nil {
		return err
	}
	var err error
	if d.blobs, err = d.p.UploadFiles(ctx, d.units, o.Dir); err != nil {
		return fmt.Errorf("upload the module: %w", err)
	}
	d.logf("project uploaded the WebAssembly module (%.1f MB) once: sent %.1f MB, where sending it to each of its %d nodes would be %.1f MB",
		mb(d.blobs.Bytes), mb(d.blobs.Uploaded), d.blobs.Replication, mb(d.blobs.Bytes*int64(d.blobs.Replication)))
	digest := sha256.Sum256(fmt.Appendf(nil, "mandelbrot %d %d", o.Tiles, o.TileSize))
	srep, err := d.p.SubmitUnits(ctx, d.ledger, d.units, o.Copies, digest[:], "demo", nil)
	if err != nil {
		return err
	}
	if len(srep.Errors) > 0 {
		return fmt.Errorf("submit: %w", srep.Errors[0])
	}
	d.logf("project submitted %d tiles × %d copies = %d jobs%s", len(d.units), o.Copies, srep.Submitted, commitNote(o.Copies))
	return nil
}

// startVolunteers starts the volunteer clients, each with its agent and
// runner, running until runCtx ends; wg counts them.
func (d *demoRun) startVolunteers(ctx, runCtx context.Context, wg *sync.WaitGroup) error {
	o := d.o
	for i := range o.Clients {
		a, err := d.net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("volunteer%d", i+1))
		if err != nil {
			return err
		}
		d.onTearDown(func() { a.Close() })
		d.volunteers = append(d.volunteers, a)
		dir := filepath.Join(o.Dir, fmt.Sprintf("volunteer%d", i+1))
		r, err := runner.New(runner.Config{Launcher: o.Launcher, Env: o.LauncherEnv, WorkRoot: filepath.Join(dir, "work"),
			AllowWASM: []string{"mandel"}, Sandbox: sandbox.Config{CacheDir: filepath.Join(dir, "wasm-cache")}})
		if err != nil {
			return err
		}
		d.onTearDown(func() { r.Close() })
		bc, err := cache.Open(filepath.Join(dir, "blob-cache"), 1<<30)
		if err != nil {
			return err
		}
		blobs, err := blobclient.NewStore(a, bc)
		if err != nil {
			return err
		}
		c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "mandel", Share: 1}}, Runner: r, Slots: 2, Blobs: blobs,
			BackoffMin: 20 * time.Millisecond, BackoffMax: 500 * time.Millisecond, Seed: o.Seed + uint64(i),
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		d.clients = append(d.clients, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Run(runCtx)
		}()
	}
	return nil
}

// awaitResults waits, the project offline, until the clients have sent
// jobs results.
func (d *demoRun) awaitResults(ctx context.Context, jobs int) error {
	last := -1
	for {
		done := 0
		for _, c := range d.clients {
			done += c.Done()
		}
		if done != last && done > 0 {
			d.logf("clients: %d of %d results sent", done, jobs)
			last = done
		}
		if done >= jobs {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: clients sent %d of %d results before the timeout", done, jobs)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func mb(n int64) float64 { return float64(n) / 1e6 }

// harvestAll harvests every 300 ms until every tile is validated, and
// returns the credit granted.
func (d *demoRun) harvestAll(ctx context.Context) ([]project.Credit, error) {
	for {
		hrep, err := d.p.Harvest(ctx, d.ledger, project.HarvestOptions{}, nil)
		if err != nil {
			return nil, err
		}
		st, err := d.ledger.Stats(time.Now())
		if err != nil {
			return nil, err
		}
		if hrep.Recorded > 0 {
			d.logf("harvest: %d new results, %d of %d tiles validated", hrep.Recorded, st.Units[project.UnitValid], len(d.units))
		}
		if st.Units[project.UnitValid] == len(d.units) {
			return st.Credit, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("demo: %d of %d tiles validated before the timeout", st.Units[project.UnitValid], len(d.units))
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// gatherCredit has the project sign and publish the last credit
// receipts, then gathers each volunteer's from its credit nodes,
// verified, as anyone could.
func (d *demoRun) gatherCredit(ctx context.Context) ([]VerifiedCredit, error) {
	cr, err := d.p.IssueCredit(ctx, d.ledger)
	if err != nil {
		return nil, err
	}
	d.logf("credit receipts: %d signed, %d published on the volunteers' credit nodes", cr.Issued, cr.Published)
	a := d.p.Agent()
	var out []VerifiedCredit
	for _, v := range d.volunteers {
		c, g, err := creditclient.Show(ctx, a.Endpoint(), a.DHT(), v.Identity().Key.Public().(ed25519.PublicKey), time.Now())
		if err != nil {
			return nil, err
		}
		out = append(out, VerifiedCredit{Client: v.Identity().Name, Total: c.Total, Nodes: len(g.Sources), Rejected: len(c.Rejected)})
	}
	return out, nil
}

// served is the requests all live nodes have served.
func (d *demoRun) served() float64 {
	var served float64
	for _, nd := range d.net.Live() {
		served += overlay.SumCounter(nd.Endpoint().Metrics().RPCReceived, "", "")
	}
	return served
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
				App:        "mandelbrot", // the module runs the built-in its argv[0] names
				ModuleFile: moduleFile,
				Args:       []string{f(ax), f(ay), f(ax + step), f(ay + step), strconv.Itoa(size), strconv.Itoa(size), "256"},
				Keywords:   []string{"mandel"}, Resources: []string{"mem:small"}, TFinish: 5 * time.Minute,
			})
		}
	}
	return out
}

// commitNote says, for copies ≥ 2, that the copies commit before they
// reveal.
func commitNote(copies int) string {
	if copies < 2 {
		return ""
	}
	return fmt.Sprintf(" (each copy commits to its tile before revealing it, once %d copies committed)", project.Quorum(copies))
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
