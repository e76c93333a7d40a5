package scenario

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// idle is how long a run may go without a submission, claim, result or
// harvest before it is taken as done: two rewrite periods (an entry lost
// with its index node is written again within one) and ten harvests.
func (rr *realRun) idle() time.Duration {
	return 2*rr.p.RewriteMax + 10*rr.p.HarvestEvery + 5*time.Second
}

// sleepUntil waits until t or ctx's end; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// at is the time s seconds after the first submission.
func (rr *realRun) at(s float64) time.Time {
	return rr.t0.Add(time.Duration(s * float64(time.Second)))
}

// submitter submits one job every 1/Rate s, open loop as the
// simulator's project (each submission in its own goroutine, at most 64
// at once, so a slow one does not hold the next back): Jobs of them
// (static) or for Duration (dynamic). A job not acknowledged by r
// replicas is sent again (the batch resumes), up to three times a second
// apart.
func (rr *realRun) submitter(ctx context.Context) {
	defer rr.submitDone.Store(true)
	o := rr.o
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, 64)
	for k := 0; ; k++ {
		t := float64(k) / o.Rate
		if o.dynamic() && t >= o.Duration.Seconds() || !o.dynamic() && k >= o.Jobs {
			return
		}
		if !sleepUntil(ctx, rr.at(t)) {
			return
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		unit := []project.Unit{{App: scenarioApp, Args: []string{"0", fmt.Sprintf("unit%d", k)}, Keywords: []string{scenarioProject},
			TFinish: rr.p.TFinish}}
		digest := sha256.Sum256(fmt.Appendf(nil, "scenario %d %d", o.Seed, k))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for try := range 4 {
				if try > 0 && !sleepUntil(ctx, time.Now().Add(time.Second)) || rr.submitOne(ctx, unit, digest[:]) {
					return
				}
			}
		}()
	}
}

// submitOne submits (or resumes) one unit's batch; it reports whether
// its job is acknowledged.
func (rr *realRun) submitOne(ctx context.Context, unit []project.Unit, digest []byte) bool {
	rep, err := rr.proj.SubmitUnits(ctx, rr.ledger, unit, 1, digest, "scenario", nil)
	if err != nil {
		if ctx.Err() == nil {
			rr.addErr("submit: %v", err)
		}
		return false
	}
	rr.acked.Add(int64(rep.Submitted))
	if rep.Submitted > 0 {
		rr.progressed()
	}
	if rep.Submitted+rep.Already >= 1 {
		return true
	}
	for _, e := range rep.Errors {
		rr.addErr("submit: %v", e)
	}
	return false
}

// harvester harvests every HarvestEvery.
func (rr *realRun) harvester(ctx context.Context) {
	for ctx.Err() == nil {
		next := time.Now().Add(rr.p.HarvestEvery)
		hrep, err := rr.proj.Harvest(ctx, rr.ledger, project.HarvestOptions{}, nil)
		if err != nil {
			if ctx.Err() == nil {
				rr.addErr("harvest: %v", err)
			}
		} else {
			if hrep.Recorded > 0 {
				rr.harvested.Add(int64(hrep.Recorded))
				rr.progressed()
			}
			for _, e := range hrep.Errors {
				if ctx.Err() == nil {
					rr.addErr("harvest: %v", e)
				}
			}
		}
		sleepUntil(ctx, next)
	}
}

// driver runs the claim and result phases.
func (rr *realRun) driver(ctx context.Context, goRun func(func(context.Context))) {
	o := rr.o
	// After the offered load, claims go on while jobs are left unclaimed
	// and something still happens (a submission, claim, result or
	// harvest within the idle time): a run that falls behind the offered
	// rate drains instead of stopping at a fixed time.
	idle := rr.idle()
	busy := func() bool { return time.Since(time.UnixMilli(rr.lastProgress.Load())) < idle }
	if o.dynamic() {
		// Claims start Lead after the first submission; each claimed job
		// is done JobLength later.
		rr.resultsDone.Store(true)
		if !sleepUntil(ctx, rr.at(o.Lead.Seconds())) {
			return
		}
		rr.claims(ctx, goRun, func() bool {
			return time.Since(rr.t0) < o.Duration || !(rr.submitDone.Load() && rr.held.Load() >= rr.acked.Load()) && busy()
		})
		rr.claimsDone.Store(true)
		return
	}
	// Static: claims start Gap after the last submission and end when every
	// job is claimed; results follow RunIdle after the last claim.
	for !rr.submitDone.Load() {
		if !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			return
		}
	}
	if !sleepUntil(ctx, time.Now().Add(o.Gap)) {
		return
	}
	rr.progressed()
	rr.claims(ctx, goRun, func() bool { return rr.held.Load() < rr.acked.Load() && busy() })
	rr.claimsDone.Store(true)
	if !sleepUntil(ctx, time.Now().Add(o.RunIdle)) {
		return
	}
	rr.mu.Lock()
	running := rr.running
	rr.running = nil
	rr.mu.Unlock()
	start := time.Now()
	for k, wc := range running {
		if !sleepUntil(ctx, start.Add(time.Duration(float64(k)/o.Rate*float64(time.Second)))) {
			return
		}
		goRun(func(ctx context.Context) { rr.finish(ctx, wc) })
	}
	rr.resultsDone.Store(true)
}

// claims starts claim attempts at Rate a second while wanted, and waits
// for them to end. Attempt k runs on client k mod Clients.
func (rr *realRun) claims(ctx context.Context, goRun func(func(context.Context)), wanted func() bool) {
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, 512)
	start := time.Now()
	for k := 0; wanted(); k++ {
		if !sleepUntil(ctx, start.Add(time.Duration(float64(k)/rr.o.Rate*float64(time.Second)))) {
			return
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rr.attempt(ctx, k%len(rr.workers), wanted, goRun)
		}()
	}
}

// attempt is one open-loop client's search and claim: an index query,
// then the claim over the replica set the entry carries; a failed try is
// retried a second later, up to five times (the simulator's clients).
func (rr *realRun) attempt(ctx context.Context, c int, wanted func() bool, goRun func(func(context.Context))) {
	w := rr.workers[c]
	for try := 0; try <= 5; try++ {
		if try > 0 && (!sleepUntil(ctx, time.Now().Add(time.Second)) || !wanted()) {
			return
		}
		hits, err := w.a.Index().Find(ctx, w.query, 1)
		if err != nil || len(hits) == 0 {
			if ctx.Err() != nil {
				return
			}
			if err != nil && !errors.Is(err, indexclient.ErrNoJob) {
				rr.failed("find failed")
				rr.addErr("client %d: find: %v", c+1, err)
			} else {
				rr.failed("no job found")
			}
			continue
		}
		h := hits[0]
		hint := make([]peer.ID, 0, len(h.Replicas))
		for _, r := range h.Replicas {
			hint = append(hint, peer.ID(r))
		}
		cl, err := w.claimer.ClaimAt(ctx, h.Job, job.PlaceKey(h.Job, h.Place), hint)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			switch {
			case errors.Is(err, claimclient.ErrLost):
				rr.failed("claim lost to another client")
			case errors.Is(err, claimclient.ErrUnknown):
				rr.failed("job unknown to its nodes")
			case errors.Is(err, claimclient.ErrHeld):
				rr.failed("job held by this client")
			default:
				rr.failed("claim failed")
				rr.addErr("client %d: %v", c+1, err)
			}
			continue
		}
		rr.won(ctx, c, w, cl, goRun)
		return
	}
}

// won records a won claim against the ground truth, fetches the job's
// spec, and queues the job (static) or runs it JobLength later (dynamic).
func (rr *realRun) won(ctx context.Context, c int, w *party, cl *claimclient.Claim, goRun func(func(context.Context))) {
	rr.claimed.Add(1)
	rr.progressed()
	now := time.Now()
	rr.mu.Lock()
	if g := rr.gt[string(cl.Job)]; g != nil && g.client != c && !g.ended && now.Before(g.until) {
		rr.doubles++
	}
	rr.gt[string(cl.Job)] = &gtClaim{client: c, until: now.Add(rr.p.TFinish)}
	if !rr.heldJobs[string(cl.Job)] {
		rr.heldJobs[string(cl.Job)] = true
		rr.held.Add(1)
	}
	rr.mu.Unlock()
	signed, spec, err := client.FetchSpec(ctx, w.a, w.a.Now(), cl.Job, cl.Nodes)
	if err != nil {
		if ctx.Err() == nil {
			rr.addErr("client %d: %v", c+1, err)
		}
		w.claimer.Release(context.WithoutCancel(ctx), cl, wire.SkipUnknown)
		rr.ended(cl.Job, c)
		rr.mu.Lock()
		if rr.heldJobs[string(cl.Job)] {
			delete(rr.heldJobs, string(cl.Job))
			rr.held.Add(-1)
		}
		rr.mu.Unlock()
		return
	}
	wc := &wonClaim{client: c, w: w, cl: cl, signed: signed, spec: spec}
	rr.pending.Add(1)
	if !rr.o.dynamic() {
		rr.mu.Lock()
		rr.running = append(rr.running, wc)
		rr.mu.Unlock()
		return
	}
	goRun(func(ctx context.Context) {
		if sleepUntil(ctx, time.Now().Add(rr.o.JobLength)) {
			rr.finish(ctx, wc)
		}
	})
}

// failed counts a failed claim attempt.
func (rr *realRun) failed(why string) {
	rr.failedAttempts.Add(1)
	rr.mu.Lock()
	rr.failBy[why]++
	rr.mu.Unlock()
}

func (rr *realRun) ended(key []byte, c int) {
	rr.mu.Lock()
	if g := rr.gt[string(key)]; g != nil && g.client == c {
		g.ended = true
	}
	rr.mu.Unlock()
}

// finish runs the zero-work application, seals the result to the project
// and sends it to the claim's nodes (client.Client's cycle, split from
// the claim by the workload's idle time).
func (rr *realRun) finish(ctx context.Context, wc *wonClaim) {
	defer rr.pending.Add(-1)
	defer rr.ended(wc.cl.Job, wc.client)
	app, ok := apps.Lookup(wc.spec.App)
	if !ok || wc.spec.App != scenarioApp {
		rr.addErr("job %s: application %q not allowed", wc.signed.CID(), wc.spec.App)
		return
	}
	start := time.Now()
	var out bytes.Buffer
	exit := int32(0)
	if err := app.Main(wc.spec.Args, &out, ""); err != nil {
		exit = 1
	}
	id := wc.w.a.Identity()
	inner := result.Inner{Job: wc.signed.Key(), ClientCert: id.Cert.Raw, Output: out.Bytes(), ExitCode: exit,
		Wall: time.Since(start).Milliseconds(), At: wc.w.a.Now().UnixMilli()}
	env, err := result.Seal(inner, id.Key, wc.spec.ResultKey, nil)
	if err != nil {
		rr.addErr("job %s: seal: %v", wc.signed.CID(), err)
		return
	}
	if _, err := wc.w.claimer.SubmitResult(ctx, wc.cl, env.Encode()); err != nil {
		if ctx.Err() == nil {
			rr.addErr("job %s: %v", wc.signed.CID(), err)
		}
		return
	}
	rr.finished.Add(1)
	rr.progressed()
}

// churn kills node slot i after an exponential lifetime and restarts it
// after an exponential down time, over and over, from its own seeded
// stream. A restarted node keeps its identity and its store (the
// simulator's comes back as a new node).
func (rr *realRun) churn(ctx context.Context, i int) {
	rng := rand.New(rand.NewPCG(rr.o.Seed, uint64(i)+0xc4))
	mean := rr.o.ChurnLife.Seconds()
	exp := func() time.Duration { return time.Duration(rng.ExpFloat64() * mean * float64(time.Second)) }
	for {
		if !sleepUntil(ctx, time.Now().Add(exp())) {
			return
		}
		if err := rr.net.Kill(i); err != nil {
			rr.addErr("churn: kill node %d: %v", i, err)
			return
		}
		if !sleepUntil(ctx, time.Now().Add(exp())) {
			return
		}
		if err := rr.net.Restart(ctx, i); err != nil {
			if ctx.Err() == nil {
				rr.addErr("churn: restart node %d: %v", i, err)
			}
			return
		}
	}
}
