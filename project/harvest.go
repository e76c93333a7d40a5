package project

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// HarvestOptions tune a harvest.
type HarvestOptions struct {
	// Equal is the validation rule; default byte equality.
	Equal Equal
	// MaxCopies bounds the copies a unit may get when results disagree.
	// Default 2 more than the file asked.
	MaxCopies int
	// PageSize is the harvest page size. Default 256.
	PageSize int
}

// HarvestReport tells what a harvest did.
type HarvestReport struct {
	Finished  int // finished entries found
	Recorded  int // new results stored in the ledger
	Collected int // jobs the nodes were told are collected
	Refused   int // jobs whose result no node delivered in a form that opens and verifies
	// RefusedCopies counts the copies single nodes sent that failed to
	// open or verify (altered, another job's, or not the client's); the
	// job's other nodes were then asked, so an honest copy may still have
	// been recorded.
	RefusedCopies int
	Decided       int // units validated by this harvest
	Extra         int // extra copies issued for inconclusive units
	// IndexErr is why the index of finished jobs could not be read in
	// full (after retries): results it did not list were not harvested.
	IndexErr error
	Errors   []error
}

// Err is nil when the harvest read the whole index and fetched every new
// result it listed; else one line saying what failed (the details are in
// Errors). An interrupted harvest is not a failed one.
func (r HarvestReport) Err() error {
	switch {
	case r.IndexErr != nil && r.Refused > 0:
		return fmt.Errorf("%w; and %d results could not be fetched from any node", r.IndexErr, r.Refused)
	case r.IndexErr != nil:
		return r.IndexErr
	case r.Refused > 0:
		return fmt.Errorf("%d results could not be fetched from any node", r.Refused)
	}
	return nil
}

// Harvest collects the project's finished jobs: it walks the region of
// "<project>:finished", fetches each new result from the job's nodes
// (the next node when one sends a copy that does not open or verify),
// opens it (decrypts, checks the client's certificate and signature),
// stores it durably in the ledger, and only then tells the nodes it is
// collected. Last it validates every unit whose verdict may have changed
// (see Ledger.Undecided: the units of new results, not every unit),
// records the verdicts with the jobs the nodes confirmed collected in one
// transaction, and issues another copy of a unit whose results disagree.
//
// Re-running after a crash loses and doubles nothing: results already in
// the ledger are not fetched again, only confirmed to the nodes, and
// units whose results an interrupted harvest recorded are validated by
// the next. A cancelled ctx stops the harvest between RPCs; what is
// recorded stays recorded, and the interruption is reported in Errors.
func (p *Project) Harvest(ctx context.Context, l *Ledger, opts HarvestOptions, progress Progress) (HarvestReport, error) {
	if opts.PageSize == 0 {
		opts.PageSize = 256
	}
	var rep HarvestReport
	w, err := p.walkFinished(ctx, l, opts.PageSize, &rep)
	if err != nil {
		return rep, err
	}
	fetch, confirm, listed := w.fetch, w.confirm, w.listed
	// Jobs recorded by an interrupted harvest but never confirmed.
	pending, err := l.Harvested()
	if err != nil {
		return rep, fmt.Errorf("ledger: jobs harvested but not collected: %w", err)
	}
	for _, s := range pending {
		if c, err := cid.Decode(s); err == nil && !listed[s] {
			confirm = append(confirm, found{key: c.Bytes(), cid: s})
			listed[s] = true
		}
	}
	for start := 0; start < len(fetch) && ctx.Err() == nil; start += 64 {
		part := fetch[start:min(start+64, len(fetch))]
		var results []Result
		var got []found
		res, refusedBy, errs := p.fetchResults(ctx, part)
		for i, f := range part {
			rep.RefusedCopies += len(refusedBy[i])
			if err := errs[i]; err != nil {
				if ctx.Err() != nil {
					continue // interrupted, not refused: the next harvest fetches it
				}
				rep.Refused++
				rep.Errors = append(rep.Errors, fmt.Errorf("job %s: %w", f.cid, err))
				continue
			}
			if res[i] == nil {
				continue
			}
			for _, e := range refusedBy[i] {
				rep.Errors = append(rep.Errors, fmt.Errorf("job %s: %w (another node's copy was recorded)", f.cid, e))
			}
			r := res[i]
			r.CID = f.cid
			results = append(results, *r)
			got = append(got, f)
		}
		if err := l.RecordResults(results, p.a.Now()); err != nil {
			return rep, err
		}
		rep.Recorded += len(results)
		for _, f := range got {
			if !listed[f.cid] {
				confirm = append(confirm, f)
				listed[f.cid] = true
			}
		}
		if progress != nil {
			progress(start+len(part), len(fetch))
		}
	}
	collected := p.collect(ctx, confirm, &rep)
	rep.Collected = len(collected)
	if ctx.Err() != nil {
		if err := l.MarkCollected(collected, p.a.Now()); err != nil {
			return rep, err
		}
		rep.Errors = append(rep.Errors, fmt.Errorf("harvest interrupted (run it again to finish): %w", ctx.Err()))
		return rep, nil
	}
	if err := p.validate(ctx, l, opts, collected, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// validate decides every unit whose verdict may have changed (see
// Ledger.Undecided), a page of units at a time, and records the verdicts
// with the jobs confirmed collected in one transaction per page (those
// with the first); then it issues another copy of each unit whose
// results disagree.
func (p *Project) validate(ctx context.Context, l *Ledger, opts HarvestOptions, collected []string, rep *HarvestReport) error {
	for after, more := int64(0), true; more; {
		pg, err := l.validateQueued(after, opts.Equal, opts.MaxCopies, collected, p.a.Now())
		if err != nil {
			return err
		}
		collected = nil
		after, more = pg.last, pg.more
		rep.Decided += pg.decided
		for _, unit := range pg.extra {
			if ctx.Err() != nil {
				rep.Errors = append(rep.Errors, fmt.Errorf("harvest interrupted before issuing another copy of unit %d (run it again to finish): %w", unit, ctx.Err()))
				return nil
			}
			if err := p.AddCopy(ctx, l, unit); err != nil {
				rep.Errors = append(rep.Errors, fmt.Errorf("unit %d: validate: %w", unit, err))
				continue
			}
			rep.Extra++
		}
		if more && ctx.Err() != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("harvest interrupted before validating the units after unit %d (run it again to finish): %w", after, ctx.Err()))
			return nil
		}
	}
	return nil
}

// validatePage is how many units a harvest validates per transaction.
const validatePage = 512

// validatedPage is what validateQueued did.
type validatedPage struct {
	last    int64   // the page's last unit
	more    bool    // another page may follow
	decided int     // units made valid
	extra   []int64 // units whose results disagree, due another copy
}

// validateQueued validates the queued units after unit after (a page of
// them) and records, in one transaction with the collected marks, their
// verdicts; a unit leaves the queue once only a new result can change its
// verdict. The copies due are left to the caller.
func (l *Ledger) validateQueued(after int64, eq Equal, maxCopies int, collected []string, now time.Time) (validatedPage, error) {
	pg := validatedPage{last: after}
	units, err := l.queuedUnits(after, validatePage)
	if err != nil {
		return pg, errors.Join(err, l.MarkCollected(collected, now))
	}
	if len(units) == 0 {
		return pg, l.MarkCollected(collected, now)
	}
	pg.more = len(units) == validatePage
	pg.last = units[len(units)-1].id
	vs := make([]unitVerdict, 0, len(units))
	for _, u := range units {
		if !u.undecided() {
			// Waiting for more results (or decided and graded): only
			// a new result can change it.
			vs = append(vs, unitVerdict{unit: u.id, done: true, results: len(u.results)})
			continue
		}
		v, done, another := decideUnit(u, eq, maxCopies)
		vs = append(vs, unitVerdict{unit: u.id, verdict: &v, done: done, results: len(u.results)})
		if v.Status == UnitValid && u.status != UnitValid {
			pg.decided++
		}
		if another {
			pg.extra = append(pg.extra, u.id)
		}
	}
	return pg, l.settle(collected, vs, now)
}

// decideUnit validates a unit whose verdict may change: a decided one has
// its late results graded against the canonical one; any other is
// validated under its quorum. done reports a verdict only a new result can
// change; another that the results disagree and another copy is due.
func decideUnit(u *unitState, eq Equal, maxCopies int) (v Verdict, done, another bool) {
	if u.status == UnitValid {
		v = Regrade(u.results, u.canonical, eq)
		return v, len(v.Valid) >= len(u.results), false
	}
	v = Validate(u.results, u.issued, Quorum(u.asked), eq)
	if maxCopies == 0 {
		maxCopies = u.asked + 2
	}
	switch v.Status {
	case UnitValid:
		return v, len(v.Valid) >= len(u.results), false
	case UnitOpen:
		return v, true, false
	default: // inconclusive: kept queued, so the next harvest retries a copy that failed
		return v, false, u.issued < maxCopies
	}
}

// found is a finished job of the project found in the index.
type found struct {
	key      []byte
	cid      string
	replicas []peer.ID // its nodes, from the index entry; empty: look them up
}

// fetchConcurrency bounds the nodes a harvest fetches results from at once.
const fetchConcurrency = 8

// eachNode runs f for every node's jobs, at most fetchConcurrency nodes
// at once, and returns when all are done.
func eachNode(byNode map[peer.ID][]int, f func(n peer.ID, idx []int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, fetchConcurrency)
	for n, idx := range byNode {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() {
				<-sem
				wg.Done()
			}()
			f(n, idx)
		}()
	}
	wg.Wait()
}

// fetchResults gets the results of jobs: each job is asked first of its
// first listed replica, in one ResultGet per node (nodes in parallel, at
// most fetchConcurrency at once); a job whose copy is missing there, or
// refused, goes on to fetchResult (its other replicas one by one, or a
// lookup when none are listed). Per job: its result (nil when not
// fetched), the copies refused, and the error when no good copy came.
func (p *Project) fetchResults(ctx context.Context, jobs []found) ([]*Result, [][]error, []error) {
	jobs = slices.Clone(jobs) // replicas are trimmed of nodes that sent forged copies
	res := make([]*Result, len(jobs))
	refused := make([][]error, len(jobs))
	errs := make([]error, len(jobs))
	byNode := map[peer.ID][]int{}
	var rest []int
	for i, f := range jobs {
		if len(f.replicas) == 0 {
			rest = append(rest, i)
			continue
		}
		byNode[f.replicas[0]] = append(byNode[f.replicas[0]], i)
	}
	o := p.opener()
	var mu sync.Mutex
	opened := make([]*unsealed, len(jobs)) // copies whose signatures are left to check, and from which node
	from := make([]peer.ID, len(jobs))
	eachNode(byNode, func(n peer.ID, idx []int) {
		for start := 0; start < len(idx); start += wire.MaxJobsPerStore {
			part := idx[start:min(start+wire.MaxJobsPerStore, len(idx))]
			req := &wire.ResultGetRequest{}
			for _, i := range part {
				req.Keys = append(req.Keys, jobs[i].key)
			}
			var resp wire.ResultGetResponse
			err := p.a.Endpoint().Call(ctx, n, wire.ProtoResultGet, req, wire.MaxResultsFrame, &resp)
			var retry []int
			for j, i := range part {
				if err != nil || j >= len(resp.Results) || len(resp.Results[j]) == 0 {
					retry = append(retry, i) // this node again among the others: it may have left it out for size
					continue
				}
				u, oerr := o.unseal(resp.Results[j], jobs[i].key)
				if oerr != nil {
					mu.Lock()
					refused[i] = append(refused[i], fmt.Errorf("copy from node %s refused: %w", n, oerr))
					jobs[i].replicas = jobs[i].replicas[1:]
					mu.Unlock()
					retry = append(retry, i)
					continue
				}
				opened[i], from[i] = u, n // each job is one node's to fill
			}
			mu.Lock()
			rest = append(rest, retry...)
			mu.Unlock()
		}
	})
	// The signatures of every copy fetched, in one batch.
	var batch []*unsealed
	var of []int
	for i, u := range opened {
		if u != nil {
			batch = append(batch, u)
			of = append(of, i)
		}
	}
	for k, err := range verifySigs(batch) {
		i := of[k]
		if err != nil {
			refused[i] = append(refused[i], fmt.Errorf("copy from node %s refused: %w", from[i], err))
			jobs[i].replicas = jobs[i].replicas[1:]
			rest = append(rest, i)
			continue
		}
		res[i] = batch[k].toResult()
	}
	for _, i := range rest {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			continue
		}
		f := jobs[i]
		if len(f.replicas) == 0 && len(refused[i]) > 0 {
			errs[i] = fmt.Errorf("no good result from any node: %w", errors.Join(refused[i]...))
			continue
		}
		r, more, err := p.fetchResult(ctx, o, f.key, f.replicas)
		refused[i] = append(refused[i], more...)
		if err != nil && len(refused[i]) > len(more) {
			err = fmt.Errorf("%w (also refused: %w)", err, errors.Join(refused[i][:len(refused[i])-len(more)]...))
		}
		res[i], errs[i] = r, err
	}
	return res, refused, errs
}

// fetchResult gets a job's result from its replicas (or, without a hint,
// its closest nodes) and opens it. A copy that does not open or verify
// (a node altered it, or sent another job's) is refused and the next node
// asked; refused lists those copies, each naming its node, also when a
// good copy was found. err wraps result.ErrForged when every copy was
// forged.
func (p *Project) fetchResult(ctx context.Context, o *opener, key []byte, replicas []peer.ID) (*Result, []error, error) {
	if len(replicas) == 0 {
		var err error
		if replicas, err = p.a.DHT().ClosestPeers(ctx, key); err != nil {
			return nil, nil, fmt.Errorf("find its nodes: %w", err)
		}
	}
	var errs, refused []error
	for _, n := range replicas {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		var resp wire.ResultGetResponse
		err := p.a.Endpoint().Call(ctx, n, wire.ProtoResultGet, &wire.ResultGetRequest{Keys: [][]byte{key}}, wire.MaxResultsFrame, &resp)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n, err))
			continue
		}
		if len(resp.Results) != 1 || len(resp.Results[0]) == 0 {
			errs = append(errs, fmt.Errorf("node %s has no result", n))
			continue
		}
		r, err := o.open(resp.Results[0], key)
		if err != nil {
			err = fmt.Errorf("copy from node %s refused: %w", n, err)
			refused = append(refused, err)
			errs = append(errs, err)
			continue
		}
		return r, refused, nil
	}
	return nil, refused, fmt.Errorf("no good result from any of %d nodes: %w", len(replicas), errors.Join(errs...))
}

// collect tells each job's nodes it is collected; it returns the jobs at
// least one node confirmed (the state spreads to the rest by republish).
// A node that fails is skipped: the job's other nodes, or the next
// harvest, confirm its jobs. Nodes are told in parallel (at most
// fetchConcurrency at once). A cancelled ctx stops it between calls.
func (p *Project) collect(ctx context.Context, jobs []found, rep *HarvestReport) []string {
	byNode := map[peer.ID][]int{}
	for i, f := range jobs {
		if ctx.Err() != nil {
			return nil
		}
		nodes := f.replicas
		if len(nodes) == 0 {
			var err error
			if nodes, err = p.a.DHT().ClosestPeers(ctx, f.key); err != nil {
				rep.Errors = append(rep.Errors, fmt.Errorf("job %s: find its nodes: %w", f.cid, err))
				continue
			}
		}
		for _, n := range nodes {
			byNode[n] = append(byNode[n], i)
		}
	}
	ok := make([]bool, len(jobs))
	at := p.a.Now().UnixMilli()
	// One signature per job (job.SignCollected): the proof nodes keep with
	// the collected state and check before they merge it. About 25 µs of
	// CPU and 64 bytes per job here, a verification per job per node.
	sigs := make([][]byte, len(jobs))
	for i, f := range jobs {
		sigs[i] = job.SignCollected(f.key, at, p.a.Identity().Key).Sig
	}
	var mu sync.Mutex
	eachNode(byNode, func(n peer.ID, idx []int) {
		for start := 0; start < len(idx) && ctx.Err() == nil; start += wire.MaxSyncItems {
			part := idx[start:min(start+wire.MaxSyncItems, len(idx))]
			req := &wire.CollectRequest{At: at}
			for _, i := range part {
				req.Keys = append(req.Keys, jobs[i].key)
				req.Sigs = append(req.Sigs, sigs[i])
			}
			var resp wire.CollectResponse
			if err := p.a.Endpoint().Call(ctx, n, wire.ProtoCollect, req, 1<<20, &resp); err != nil {
				continue // the job's other nodes, or the next harvest, confirm it
			}
			mu.Lock()
			for j, i := range part {
				// A node that no longer holds the job (deleted after
				// T_collect) has nothing left to collect either.
				if j < len(resp.Results) && (resp.Results[j].Status == wire.StatusOK || resp.Results[j].Status == wire.StatusNotFound) {
					ok[i] = true
				}
			}
			mu.Unlock()
		}
	})
	var out []string
	for i, f := range jobs {
		if ok[i] {
			out = append(out, f.cid)
		}
	}
	return out
}
