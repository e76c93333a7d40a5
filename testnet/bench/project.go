package bench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/up-pool/up/project"
)

// runProject runs the project's submitter and harvester, their goroutines
// labelled party=project, until both have returned, logging the progress
// every 2 s. The first error either returns ends the run and is returned.
func (r *benchRun) runProject(ctx context.Context) error {
	projDone := make(chan error, 2)
	pctx := pprof.WithLabels(ctx, pprof.Labels("party", "project"))
	go func() {
		pprof.SetGoroutineLabels(pctx)
		projDone <- r.submitAll(ctx)
	}()
	go func() {
		pprof.SetGoroutineLabels(pctx)
		projDone <- r.harvestAll(ctx)
	}()
	progress := time.NewTicker(2 * time.Second)
	ticks := 0
	var runErr error
	for pending := 2; pending > 0; {
		select {
		case err := <-projDone:
			pending--
			if err != nil && runErr == nil {
				runErr = err
				r.cancel()
			}
		case <-progress.C:
			ticks++
			r.logProgress(ticks)
		}
	}
	progress.Stop()
	return runErr
}

// logProgress, at the run's ticks-th 2 s tick, asks o.GiveUp (every fifth
// tick, once every job is submitted) whether to end the run, samples the
// live heap and logs the jobs submitted and harvested.
func (r *benchRun) logProgress(ticks int) {
	o := r.o
	if o.GiveUp != nil && ticks%5 == 0 && r.submitted.Load() >= int64(o.Jobs) && o.GiveUp(r.net, r.ledger) {
		r.logf("  giving up: the jobs left are not expected to finish")
		r.cancel()
	}
	h := r.harvested.Load()
	r.midRunHeapProfile(h)
	live := r.heap.sample(h >= int64(o.Jobs)/5 && time.Since(r.t0) > o.TCollect)
	r.rep.HeapCurve = append(r.rep.HeapCurve, HeapSample{S: time.Since(r.t0).Seconds(), Harvested: h, LiveMiB: float64(live) / (1 << 20)})
	r.logf("  %6.1f s: %d submitted, %d harvested, live heap %.0f MiB", time.Since(r.t0).Seconds(), r.submitted.Load(), h, float64(live)/(1<<20))
}

// midRunHeapProfile writes a heap profile when another
// o.HeapProfileEvery jobs have been harvested since the last one; a
// failure is logged and ends the profiles, not the run.
func (r *benchRun) midRunHeapProfile(harvested int64) {
	every := int64(r.o.HeapProfileEvery)
	if every <= 0 || r.o.HeapProfileAt == nil || harvested < r.lastHeapProfile+every {
		return
	}
	r.lastHeapProfile = harvested / every * every
	err := func() error {
		w, err := r.o.HeapProfileAt(harvested)
		if err != nil {
			return err
		}
		runtime.GC()
		if err := pprof.WriteHeapProfile(w); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	}()
	if err != nil {
		r.logf("  heap profile at %d harvested: %v (no more taken)", harvested, err)
		r.o.HeapProfileEvery = 0
	}
}

// submitAll submits the bench's units, o.Copies jobs each, a part at a
// time: with o.Rate, a part every 100 ms sized to the rate; else o.Batch
// jobs a part, keeping at most o.Window jobs submitted and not harvested.
// Each part's units are made when it is submitted, so the run holds no
// list sized by o.Jobs.
func (r *benchRun) submitAll(ctx context.Context) error {
	o := r.o
	n, kws := o.Jobs/o.Copies, benchKeywords(o.Keywords)
	step := max(1, o.Batch/o.Copies) // units per submission
	var tick *time.Ticker
	if o.Rate > 0 {
		step = max(1, int(math.Round(o.Rate/10/float64(o.Copies))))
		tick = time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
	}
	for b, start := 0, 0; start < n; b, start = b+1, start+step {
		part := benchUnits(start, min(start+step, n), kws)
		if err := r.awaitTurn(ctx, tick, len(part)*o.Copies); err != nil {
			return err
		}
		if err := r.submit(ctx, b, part); err != nil {
			return err
		}
	}
	return nil
}

// awaitTurn waits until the next part of jobs may be submitted: for the
// rate's next tick when tick is set, else until the window has room for
// them.
func (r *benchRun) awaitTurn(ctx context.Context, tick *time.Ticker, jobs int) error {
	if tick != nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	for r.submitted.Load()-r.harvested.Load()+int64(jobs) > int64(r.o.Window) {
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// submit submits part b of the units and counts the jobs r replicas
// acknowledged; a job they did not is an error.
func (r *benchRun) submit(ctx context.Context, b int, part []project.Unit) error {
	digest := sha256.Sum256(fmt.Appendf(nil, "bench %d %d", r.o.Seed, b))
	ts := time.Now()
	srep, err := r.p.SubmitUnits(ctx, r.ledger, part, r.o.Copies, digest[:], "bench", nil)
	r.submitWall += time.Since(ts)
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	for _, e := range srep.Errors {
		r.addErr(e)
	}
	r.submitted.Add(int64(srep.Submitted))
	if srep.Submitted != len(part)*r.o.Copies {
		return fmt.Errorf("submit: %d of %d jobs acknowledged by r replicas", srep.Submitted, len(part)*r.o.Copies)
	}
	return nil
}

// harvestAll harvests until every job's result is recorded, pausing 20 ms
// after a pass that recorded none. At the timeout it logs where the jobs
// not harvested stand.
func (r *benchRun) harvestAll(ctx context.Context) error {
	for r.harvested.Load() < int64(r.o.Jobs) {
		if ctx.Err() != nil {
			r.logf("unharvested jobs:\n%s%s", r.net.Unharvested(r.ledger, r.p.Name(), 8), r.clientsDiag())
			return fmt.Errorf("harvested %d of %d jobs before the timeout: %w", r.harvested.Load(), r.o.Jobs, ctx.Err())
		}
		start := time.Now()
		recorded, err := r.harvest(ctx)
		if err != nil {
			return err
		}
		wait := r.o.HarvestEvery - time.Since(start)
		if recorded == 0 {
			wait = max(wait, 20*time.Millisecond)
		}
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
	}
	return nil
}

// harvest runs one Harvest pass, adds what it recorded, refused and
// collected to the report and returns the results it recorded.
func (r *benchRun) harvest(ctx context.Context) (recorded int, err error) {
	ts := time.Now()
	hrep, err := r.p.Harvest(ctx, r.ledger, project.HarvestOptions{}, nil)
	r.harvestWall += time.Since(ts)
	r.rep.Harvests++
	if err != nil {
		return 0, fmt.Errorf("harvest: %w", err)
	}
	for _, e := range hrep.Errors {
		r.addErr(e)
	}
	r.rep.Recorded += hrep.Recorded
	r.rep.RefusedCopies += hrep.RefusedCopies
	r.rep.Collected += hrep.Collected
	r.harvested.Add(int64(hrep.Recorded))
	return hrep.Recorded, nil
}

// benchKeywords are the project's name and keywords-1 more keywords.
func benchKeywords(keywords int) []string {
	kws := []string{benchProject}
	for k := 2; k <= keywords; k++ {
		kws = append(kws, fmt.Sprintf("benchkw%d", k))
	}
	return kws
}

// benchUnits are units from to to-1 of the zero-work application, each
// with its own seed, listed under kws.
func benchUnits(from, to int, kws []string) []project.Unit {
	out := make([]project.Unit, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, project.Unit{App: App, Args: []string{"0", fmt.Sprintf("unit%d", i)}, Keywords: kws, TFinish: 5 * time.Minute})
	}
	return out
}

// clientsDiag is a line per client: its jobs done, failed and released,
// its claims and queries by outcome.
func (r *benchRun) clientsDiag() string {
	var b strings.Builder
	for i, c := range r.cls {
		st := c.Status()
		fmt.Fprintf(&b, "  client worker%d: done %d, failed %d, released %d, claims %+v, queries %v\n", i+1, st.Done, st.Failed, st.Released, st.Claims, st.Queries)
	}
	return b.String()
}
