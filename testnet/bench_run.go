package testnet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
)

// RunBench runs the whole job lifecycle in one process: opts.Nodes nodes on
// loopback TCP (full libp2p stack), a project and clients running a
// zero-work built-in application; the project submits jobs (r acks each),
// the nodes write their index entries, the clients query, claim, confirm
// and send results to the job's nodes, the nodes list the finished jobs,
// the project harvests, validates and collects. It measures throughput,
// CPU, RPCs, lookups, latency, bytes and memory per job.
func RunBench(ctx context.Context, o BenchOptions) (BenchReport, error) {
	o.defaults()
	rep := BenchReport{Nodes: o.Nodes, R: o.R, Clients: o.Clients, Slots: o.Slots, Jobs: o.Jobs, Units: o.Jobs / o.Copies,
		Copies: o.Copies, Keywords: o.Keywords, Exec: o.Exec, OfferedRate: o.Rate, MinRPCsPerJob: 4*o.R + o.Keywords + 4}
	if err := o.Validate(); err != nil {
		return rep, err
	}
	logf := lineLogger(o.Log)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	setup := time.Now()
	opts := Options{Nodes: o.Nodes, Transport: TCP, Dir: o.Dir, Seed: o.Seed, PoolLoops: true,
		Configure: func(_ int, cfg *node.Config) {
			// Per-client rate limits defend a node; the bench measures
			// capacity, so they are out of the way.
			cfg.Claim.Limit, cfg.Claim.Burst = 1e9, 1<<30
			if o.TCollect > 0 {
				// The production periods scaled with T_collect (2 h):
				// republish every 25 ± 5 min, replica expiry 1 h, so
				// replicas still converge before collected jobs go.
				cfg.Pool.TCollect = o.TCollect
				cfg.Pool.ExpiryInterval = min(o.TCollect/4, 10*time.Second)
				cfg.Pool.RepublishInterval, cfg.Pool.RepublishJitter = o.TCollect*25/120, o.TCollect*5/120
				cfg.Pool.ReplicaExpiry = o.TCollect / 2
			}
		}}
	opts.DHT.Replication = o.R
	opts.Adversary = o.Adversary
	opts.Index.Server.QueryLimit, opts.Index.Server.QueryBurst = 1e9, 1<<30
	if o.TCollect > 0 {
		opts.Index.Writer.BackupDelay = o.TCollect * 10 / 120 // 10 min of 2 h
	}
	if o.BackupDelay > 0 {
		opts.Index.Writer.BackupDelay = o.BackupDelay
	}
	net, err := Start(ctx, opts)
	if err != nil {
		return rep, err
	}
	defer net.Close()
	p, err := net.NewProject(ctx, benchProject)
	if err != nil {
		return rep, err
	}
	defer p.Agent().Close()
	ledger, err := project.OpenLedger(filepath.Join(o.Dir, "ledger.db"))
	if err != nil {
		return rep, err
	}
	defer ledger.Close()
	agents := make([]*agent.Agent, o.Clients)
	for i := range agents {
		if agents[i], err = net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("worker%d", i+1)); err != nil {
			return rep, err
		}
		defer agents[i].Close()
	}
	logf("%d nodes (r = %d), a project and %d clients × %d slots up on loopback TCP in %s", o.Nodes, o.R, o.Clients, o.Slots,
		time.Since(setup).Round(time.Millisecond))

	// Baselines.
	m0 := benchCounters(net, append([]*agent.Agent{p.Agent()}, agents...))
	var prof *bytes.Buffer
	if o.ProjectShare || o.CPUProfile != nil {
		prof = new(bytes.Buffer)
		if err := pprof.StartCPUProfile(prof); err != nil {
			prof = nil
			rep.ShareNote = "not sampled: " + err.Error()
		}
	}
	cpu0, t0 := cpuNow(), time.Now()

	// Clients.
	var harvested atomic.Int64
	runCtx, stopClients := context.WithCancel(ctx)
	defer stopClients()
	var wg sync.WaitGroup
	var claimMu sync.Mutex
	var claimTimes []time.Duration
	var ws []*benchWorker
	var cls []*client.Client
	attrs := client.Attributes{OS: runtime.GOOS, Arch: runtime.GOARCH} // as client.New fills them; memory unknown
	for i, a := range agents {
		if o.Exec == ExecSubprocess {
			r, err := runner.New(runner.Config{Launcher: o.Launcher, Env: o.LauncherEnv, WorkRoot: filepath.Join(o.Dir, fmt.Sprintf("work%d", i+1)),
				Allow: map[string][]string{benchProject: {BenchApp}}})
			if err != nil {
				return rep, err
			}
			c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: benchProject, Share: 1}}, Runner: r, Slots: o.Slots,
				BackoffMin: 10 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Seed: o.Seed + uint64(i),
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				return rep, err
			}
			cls = append(cls, c)
			wg.Add(1)
			go pprof.Do(runCtx, pprof.Labels("party", "client"), func(ctx context.Context) {
				defer wg.Done()
				_ = c.Run(ctx)
			})
			continue
		}
		w := &benchWorker{a: a, claimer: claimnet.NewClaimer(a.Endpoint(), a.DHT(), nil, 0), query: client.QueryFor(benchProject, attrs),
			units: map[string]bool{}}
		w.claimer.SetSigner(a.Identity().Key)
		ws = append(ws, w)
		for range o.Slots {
			wg.Add(1)
			go pprof.Do(runCtx, pprof.Labels("party", "client"), func(ctx context.Context) {
				defer wg.Done()
				w.loop(ctx, func(d time.Duration) {
					claimMu.Lock()
					claimTimes = append(claimTimes, d)
					claimMu.Unlock()
				})
			})
		}
	}

	// The project: a submitter and a harvester.
	var submitted atomic.Int64
	var errMu sync.Mutex
	addErr := func(err error) {
		errMu.Lock()
		if len(rep.Errors) < 20 {
			rep.Errors = append(rep.Errors, err.Error())
		}
		errMu.Unlock()
	}
	var submitWall, harvestWall time.Duration
	projDone := make(chan error, 2)
	pctx := pprof.WithLabels(ctx, pprof.Labels("party", "project"))
	go func() {
		pprof.SetGoroutineLabels(pctx)
		projDone <- func() error {
			units := benchUnits(o.Jobs/o.Copies, o.Keywords)
			step := max(1, o.Batch/o.Copies) // units per submission
			var tick *time.Ticker
			if o.Rate > 0 {
				step = max(1, int(math.Round(o.Rate/10/float64(o.Copies))))
				tick = time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
			}
			for b, start := 0, 0; start < len(units); b, start = b+1, start+step {
				part := units[start:min(start+step, len(units))]
				if tick != nil {
					select {
					case <-tick.C:
					case <-ctx.Done():
						return ctx.Err()
					}
				} else {
					for submitted.Load()-harvested.Load()+int64(len(part)*o.Copies) > int64(o.Window) {
						select {
						case <-time.After(2 * time.Millisecond):
						case <-ctx.Done():
							return ctx.Err()
						}
					}
				}
				digest := sha256.Sum256(fmt.Appendf(nil, "bench %d %d", o.Seed, b))
				ts := time.Now()
				srep, err := p.SubmitUnits(ctx, ledger, part, o.Copies, digest[:], "bench", nil)
				submitWall += time.Since(ts)
				if err != nil {
					return fmt.Errorf("submit: %w", err)
				}
				for _, e := range srep.Errors {
					addErr(e)
				}
				submitted.Add(int64(srep.Submitted))
				if srep.Submitted != len(part)*o.Copies {
					return fmt.Errorf("submit: %d of %d jobs acknowledged by r replicas", srep.Submitted, len(part)*o.Copies)
				}
			}
			return nil
		}()
	}()
	go func() {
		pprof.SetGoroutineLabels(pctx)
		projDone <- func() error {
			for harvested.Load() < int64(o.Jobs) {
				if ctx.Err() != nil {
					logf("unharvested jobs:\n%s", unharvested(net, ledger, p.Name(), 8, ws))
					return fmt.Errorf("harvested %d of %d jobs before the timeout: %w", harvested.Load(), o.Jobs, ctx.Err())
				}
				ts := time.Now()
				hrep, err := p.Harvest(ctx, ledger, project.HarvestOptions{}, nil)
				harvestWall += time.Since(ts)
				rep.Harvests++
				if err != nil {
					return fmt.Errorf("harvest: %w", err)
				}
				for _, e := range hrep.Errors {
					addErr(e)
				}
				rep.Recorded += hrep.Recorded
				rep.RefusedCopies += hrep.RefusedCopies
				rep.Collected += hrep.Collected
				harvested.Add(int64(hrep.Recorded))
				if hrep.Recorded == 0 {
					select {
					case <-time.After(20 * time.Millisecond):
					case <-ctx.Done():
					}
				}
			}
			return nil
		}()
	}()
	progress := time.NewTicker(2 * time.Second)
	ticks := 0
	var heap heapTrack
	var runErr error
	for pending := 2; pending > 0; {
		select {
		case err := <-projDone:
			pending--
			if err != nil && runErr == nil {
				runErr = err
				cancel()
			}
		case <-progress.C:
			ticks++
			if o.GiveUp != nil && ticks%5 == 0 && submitted.Load() >= int64(o.Jobs) && o.GiveUp(net, ledger) {
				logf("  giving up: the jobs left are not expected to finish")
				cancel()
			}
			h := harvested.Load()
			live := heap.sample(h >= int64(o.Jobs)/5 && time.Since(t0) > o.TCollect)
			logf("  %6.1f s: %d submitted, %d harvested, live heap %.0f MiB", time.Since(t0).Seconds(), submitted.Load(), h, float64(live)/(1<<20))
		}
	}
	progress.Stop()
	elapsed := time.Since(t0)
	cpu := cpuNow() - cpu0
	stopClients()
	wg.Wait()
	if prof != nil {
		pprof.StopCPUProfile()
	}
	m1 := benchCounters(net, append([]*agent.Agent{p.Agent()}, agents...))
	rep.Submitted = int(submitted.Load())
	if runErr != nil {
		if o.Inspect != nil {
			o.Inspect(net, ledger)
		}
		return rep, runErr
	}

	jobs := float64(o.Jobs)
	rep.ElapsedS = elapsed.Seconds()
	rep.JobsPerSec = jobs / elapsed.Seconds()
	rep.CPUUSPerJob = float64(cpu.Microseconds()) / jobs
	rep.SubmitWallS, rep.HarvestWallS = submitWall.Seconds(), harvestWall.Seconds()
	if o.HeapProfile != nil {
		runtime.GC()
		if err := pprof.WriteHeapProfile(o.HeapProfile); err != nil {
			return rep, fmt.Errorf("write the heap profile: %w", err)
		}
	}
	if prof != nil && o.CPUProfile != nil {
		if _, err := o.CPUProfile.Write(prof.Bytes()); err != nil {
			return rep, fmt.Errorf("write the CPU profile: %w", err)
		}
	}
	if prof != nil && o.ProjectShare {
		by, total, err := cpuByLabel(prof.Bytes(), "party")
		if err != nil {
			rep.ShareNote = "profile unreadable: " + err.Error()
		} else {
			rep.PartyCPUUSPerJob = map[string]float64{}
			for k, v := range by {
				if k == "" {
					k = "nodes+runtime"
				}
				rep.PartyCPUUSPerJob[k] = float64(v.Microseconds()) / jobs
			}
			rep.ProfiledCPUS = total.Seconds()
			if work, err := cpuByWork(prof.Bytes(), "", ""); err == nil {
				rep.WorkCPUUSPerJob = usPerJob(work, jobs)
			}
			if work, err := cpuByWork(prof.Bytes(), "party", "project"); err == nil {
				rep.ProjectWorkCPUUSPerJob = usPerJob(work, jobs)
			}
			rep.ShareNote = "pprof samples (100 Hz) by goroutine label; the project's and clients' connection loops carry their labels, GC workers count as runtime"
		}
	}
	rep.RPCsByProtocol, rep.RPCsByRole = map[string]float64{}, map[string]float64{}
	for k, v := range m1.byProto {
		if d := v - m0.byProto[k]; d > 0 {
			rep.RPCsByProtocol[k] = d / jobs
			rep.RPCsPerJob += d / jobs
		}
	}
	for k, v := range m1.byRole {
		if d := v - m0.byRole[k]; d > 0 {
			rep.RPCsByRole[k] = d / jobs
		}
	}
	rep.LookupsPerJob = map[string]float64{}
	for k, v := range m1.lookups {
		rep.LookupsPerJob[k] = float64(v-m0.lookups[k]) / jobs
	}
	rep.LookupRPCsPerJob = float64(m1.lookupRPCs-m0.lookupRPCs) / jobs
	for _, w := range ws {
		st := w.claimer.Stats()
		rep.ClaimsWon += st.Won
		rep.ClaimsLost += st.Lost
		rep.ClaimsFailed += st.Failed + st.Unknown
		rep.Runs += int(w.runs.Load())
		rep.EmptyFinds += int(w.empty.Load())
		rep.Released += int(w.released.Load())
		if e := w.firstErr.Load(); e != nil {
			addErr(*e)
		}
	}
	for _, c := range cls {
		st := c.Status()
		rep.ClaimsWon += st.Claims.Won
		rep.ClaimsLost += st.Claims.Lost
		rep.ClaimsFailed += st.Claims.Failed + st.Claims.Unknown
		rep.Runs += st.Done
	}
	rep.Claim = quantiles(claimTimes)

	// Latency and consistency from the ledger.
	var lat []time.Duration
	rows, err := ledger.DB().Query(`SELECT j.prepared, r.harvested FROM jobs j JOIN results r ON r.cid = j.cid`)
	if err != nil {
		return rep, err
	}
	for rows.Next() {
		var a, b int64
		if err := rows.Scan(&a, &b); err != nil {
			rows.Close()
			return rep, err
		}
		lat = append(lat, time.Duration(b-a)*time.Millisecond)
	}
	rows.Close()
	rep.SubmitToHarvest = quantiles(lat)
	db := ledger.DB()
	_ = db.QueryRow(`SELECT COUNT(*) FROM results`).Scan(&rep.LedgerResults)
	_ = db.QueryRow(`SELECT COUNT(*) FROM jobs WHERE state = ?`, project.StateCollected).Scan(&rep.LedgerCollect)
	_ = db.QueryRow(`SELECT COUNT(*) FROM units WHERE status = ?`, project.UnitValid).Scan(&rep.UnitsValid)
	if o.Inspect != nil {
		o.Inspect(net, ledger)
	}
	for _, nd := range net.Live() {
		nd.Pool().Each(func(pool.Held) bool { rep.HeldAtEnd++; return true })
	}
	if o.TCollect > 0 {
		left := func() (jobs, entries int) {
			for _, nd := range net.Live() {
				nd.Pool().Each(func(pool.Held) bool { jobs++; return true })
				entries += nd.Index().Len()
			}
			return jobs, entries
		}
		done := t0.Add(elapsed)
		// Replicas the claim, result or collect did not reach (a holder
		// beyond the listed r, a call that failed) learn the collected
		// state from the next republish round, every 20-30 min on the
		// nodes: run one now instead of waiting for it.
		net.RepublishAll(ctx)
		deadline := time.Now().Add(o.TCollect + 30*time.Second)
		rep.EmptyAfterS = -1
		for {
			rep.LeftJobs, rep.LeftEntries = left()
			if rep.LeftJobs == 0 && rep.LeftEntries == 0 {
				rep.EmptyAfterS = time.Since(done).Seconds()
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				for _, nd := range net.Live() {
					nd.Pool().Each(func(h pool.Held) bool {
						logf("left after T_collect: %s holds job %x in state %s (at %d)", nd.Name(), h.Key[len(h.Key)-4:], h.State.Phase, h.State.At)
						return true
					})
				}
				break
			}
			select {
			case <-time.After(250 * time.Millisecond): // the nodes' expiry loops run on their own
			case <-ctx.Done():
			}
		}
		if o.AfterEmpty != nil {
			o.AfterEmpty(net)
		}
	}

	// libp2p's bandwidth meters update once a second.
	time.Sleep(1200 * time.Millisecond)
	rep.BytesPerJob = float64(net.wireBytes()-m0.bytes) / jobs
	rep.PeakRSSMiB = float64(peakRSS()) / (1 << 20)
	rep.RSSPerNodeMiB = rep.PeakRSSMiB / float64(o.Nodes)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rep.HeapMiB = float64(ms.HeapInuse) / (1 << 20)
	if heap.warm > 0 {
		rep.LiveHeapWarmMiB = float64(heap.warm) / (1 << 20)
		rep.LiveHeapEndMiB = float64(heap.end) / (1 << 20)
		rep.LiveHeapMaxMiB = float64(heap.max) / (1 << 20)
	}
	return rep, nil
}

// benchUnits are n units of the zero-work application, each with its
// own seed, listed under the project's name and keywords-1 more keywords.
func benchUnits(n, keywords int) []project.Unit {
	kws := []string{benchProject}
	for k := 2; k <= keywords; k++ {
		kws = append(kws, fmt.Sprintf("benchkw%d", k))
	}
	out := make([]project.Unit, n)
	for i := range out {
		out[i] = project.Unit{App: BenchApp, Args: []string{"0", fmt.Sprintf("unit%d", i)}, Keywords: kws, TFinish: 5 * time.Minute}
	}
	return out
}
