package project

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
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
	// PageSize is how many jobs a harvest reads from the index per
	// request, and how many listed jobs it fetches together and records
	// in one transaction: one request per node holding some (at most
	// wire.MaxJobsPerStore keys each, so what a page holds in memory is
	// bounded by the nodes' reply frames), one batch of signatures to
	// verify, one synced commit. Larger pages cost less per job; a crash
	// loses at most a page's fetching, never a result (a node keeps a
	// result until told it is collected, which follows the commit).
	// Default 256.
	PageSize int
	// LostAfter is T_lost: how long (on the project's clock, from the
	// first harvest that found it so) a job listed finished may go with
	// no node able to serve its result before it is declared lost and its
	// unit gets another copy (see judgeUnserved). Default DefaultLostAfter
	// (1 h).
	LostAfter time.Duration
	// CreditEvery is the least time, on the project's clock, between two
	// harvests of one Project that walk "<project>:trickle" and sign and
	// publish credit receipts: a
	// receipt per client covers every result since the last, so a
	// harvest every few seconds would publish each client's receipts on
	// its r nodes every few seconds for a few results each. The first
	// harvest of a Project always issues them; IssueCredit forces it.
	// Default DefaultCreditEvery (30 s); negative: every harvest.
	CreditEvery time.Duration
	// CreditAfter is how many valid results a client may have that no
	// receipt credits before a harvest between two issues on
	// CreditEvery's schedule signs and publishes its receipt early (only
	// for the clients whose results that harvest recorded). Its quota of
	// jobs in progress grows only with receipts, and a fresh client's is
	// small. Default DefaultCreditAfter (64); negative: never early.
	CreditAfter int
	// Adaptive is the trust rule and spot-check rate of adaptive
	// replication (job files with adaptive: true); zero: the defaults.
	Adaptive AdaptivePolicy
}

// DefaultCreditEvery is HarvestOptions.CreditEvery's default.
const DefaultCreditEvery = 30 * time.Second

// DefaultCreditAfter is HarvestOptions.CreditAfter's default: half a
// receipt's most entries (credit.MaxEntries).
const DefaultCreditAfter = 64

// HarvestReport tells what a harvest did.
type HarvestReport struct {
	Finished  int // finished entries found
	Recorded  int // new results stored in the ledger
	Collected int // jobs the nodes were told are collected
	Refused   int // jobs whose result no node delivered in a form that opens and verifies (not yet declared lost)
	// Lost counts the jobs this harvest declared lost: no node could serve
	// their result for LostAfter; each one's unit got another copy (unless
	// it was valid already) and its nodes were told it is collected.
	Lost int
	// RefusedCopies counts the copies single nodes sent that failed to
	// open or verify (altered, another job's, or not the client's); the
	// job's other nodes were then asked, so an honest copy may still have
	// been recorded.
	RefusedCopies int
	Decided       int // units validated by this harvest
	Extra         int // extra copies issued for inconclusive units
	// Withdrawn counts the blobs withdrawn from the overlay: every unit
	// naming them is valid.
	Withdrawn int
	// Adaptive counts the adaptive units this harvest decided: results
	// accepted alone, units spot-checked, units replicated (adaptive.go).
	Adaptive AdaptiveReport
	// Credit is what the harvest did with credit receipts: signed for the
	// results graded valid, published on their clients' nodes.
	Credit Credited
	// Trickles is what the harvest of running sequences' trickles did
	// (HarvestTrickles), on the credit's schedule (CreditEvery).
	Trickles TrickleReport
	// Reveals is what checking commit–reveal jobs' results against their
	// commitments did and cost (reveal.go).
	Reveals RevealReport
	// IndexErr is why the index of finished jobs could not be read in
	// full (after retries): results it did not list were not harvested.
	IndexErr error
	Errors   []error

	// clients are the keys of the clients whose results this harvest
	// recorded, repeats included: those an early receipt may be due.
	clients [][]byte
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
// A job no listed node serves is asked of its closest nodes (the
// project's own lookup); when they answer without a good copy and none
// holds the job ready or claimed, its loss timer starts (ledger
// unservable_since, the project's clock). Refused until then, it is
// declared lost after opts.LostAfter of such harvests: its unit gets
// another copy, its nodes are told it is collected, and a result that
// shows up for it later is not fetched (judgeUnserved).
//
// Re-running after a crash loses and doubles nothing: results already in
// the ledger are not fetched again, only confirmed to the nodes, and
// units whose results an interrupted harvest recorded are validated by
// the next. A cancelled ctx stops the harvest between RPCs; what is
// recorded stays recorded, and the interruption is reported in Errors.
func (p *Project) Harvest(ctx context.Context, l *Ledger, opts HarvestOptions, progress Progress) (HarvestReport, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 256
	}
	var rep HarvestReport
	w, err := p.walkFinished(ctx, l, opts.PageSize, &rep)
	if err != nil {
		return rep, err
	}
	fetch, confirm, listed := w.fetch, w.confirm, w.listed
	// Jobs recorded by an interrupted harvest but never confirmed.
	pending, err := l.harvestedJobs()
	if err != nil {
		return rep, fmt.Errorf("ledger: jobs harvested but not collected: %w", err)
	}
	for _, j := range pending {
		if c, err := cid.Decode(j.cid); err == nil && !listed[j.cid] {
			confirm = append(confirm, found{key: c.Bytes(), cid: j.cid, place: j.place})
			listed[j.cid] = true
		}
	}
	for start := 0; start < len(fetch) && ctx.Err() == nil; start += opts.PageSize {
		part := fetch[start:min(start+opts.PageSize, len(fetch))]
		got, err := p.fetchPart(ctx, l, part, opts, &rep)
		if err != nil {
			return rep, err
		}
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
	if err := p.withdrawBlobs(ctx, l, &rep); err != nil {
		return rep, err
	}
	p.countRecorded(rep.clients)
	if p.creditDue(opts.CreditEvery) {
		// Trickles first: their partial credit is in the ledger before the
		// receipts are signed.
		tr, err := p.HarvestTrickles(ctx, l, opts.PageSize)
		rep.Trickles = tr
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("trickles: %w", err))
		}
		cr, err := p.IssueCredit(ctx, l)
		rep.Credit = cr
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("credit receipts: %w", err))
		}
	} else if opts.CreditAfter >= 0 {
		least := opts.CreditAfter
		if least == 0 {
			least = DefaultCreditAfter
		}
		cr, err := p.issueEarly(ctx, l, rep.clients, least)
		rep.Credit = cr
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("early credit receipts: %w", err))
		}
	}
	return rep, nil
}

// fetchPart fetches the results of part, records those that came (one
// synced transaction), and judges the jobs no node served
// (judgeUnserved); it returns the jobs whose nodes are to be told they
// are collected: those recorded, and those declared lost.
func (p *Project) fetchPart(ctx context.Context, l *Ledger, part []found, opts HarvestOptions, rep *HarvestReport) ([]found, error) {
	var results []Result
	var got []found
	var failed []unserved
	for i, out := range p.fetchResults(ctx, part) {
		f := part[i]
		rep.RefusedCopies += len(out.refused)
		if out.err != nil {
			if ctx.Err() == nil { // interrupted is not refused: the next harvest fetches it
				failed = append(failed, unserved{found: f, err: out.err, evidence: out.evidence})
			}
			continue
		}
		if out.res == nil {
			continue
		}
		for _, e := range out.refused {
			rep.Errors = append(rep.Errors, fmt.Errorf("job %s: %w (another node's copy was recorded)", f.cid, e))
		}
		r := out.res
		r.CID = f.cid
		results = append(results, *r)
		got = append(got, f)
	}
	results, got = p.checkReveals(ctx, l, results, got, rep)
	decided, err := l.recordResults(results, p.a.Now(), true)
	if err != nil {
		return nil, err
	}
	rep.Recorded += len(results)
	rep.Decided += decided
	for i := range results {
		rep.clients = append(rep.clients, results[i].ClientKey)
	}
	lost, err := p.judgeUnserved(ctx, l, failed, opts, rep)
	return append(got, lost...), err
}

// validate decides every unit whose verdict may have changed (see
// Ledger.Undecided), a page of units at a time, and records the verdicts
// with the jobs confirmed collected in one transaction per page (those
// with the first); then it issues another copy of each unit whose
// results disagree.
func (p *Project) validate(ctx context.Context, l *Ledger, opts HarvestOptions, collected []string, rep *HarvestReport) error {
	for after, more := int64(0), true; more; {
		pg, err := l.validateQueued(after, opts, collected, p.a.Now())
		if err != nil {
			return err
		}
		collected = nil
		after, more = pg.last, pg.more
		rep.Decided += pg.decided
		rep.Adaptive.Single += pg.adaptive.Single
		rep.Adaptive.SpotChecked += pg.adaptive.SpotChecked
		rep.Adaptive.Replicated += pg.adaptive.Replicated
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
	// adaptive counts the adaptive decisions made.
	adaptive AdaptiveReport
}

// validateQueued validates the queued units after unit after (a page of
// them) and records, in one transaction with the collected marks, their
// verdicts; a unit leaves the queue once only a new result can change its
// verdict. An adaptive unit's first successful result is judged first
// (adaptiveJudge): alone, or the unit replicated. The copies due are left
// to the caller. Of opts it uses Equal, MaxCopies and Adaptive.
func (l *Ledger) validateQueued(after int64, opts HarvestOptions, collected []string, now time.Time) (validatedPage, error) {
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
	judge := newAdaptiveJudge(l, opts.Adaptive)
	for _, u := range units {
		if !u.undecided() {
			// Waiting for more results (or decided and graded): only
			// a new result can change it.
			vs = append(vs, unitVerdict{unit: u.id, done: true, results: len(u.results)})
			continue
		}
		ad, err := judge.judge(u)
		if err != nil {
			return pg, errors.Join(err, l.MarkCollected(collected, now))
		}
		if ad != nil {
			pg.adaptive.add(ad.decision)
		}
		v, done, another := decideUnit(u, opts.Equal, opts.MaxCopies)
		vs = append(vs, unitVerdict{unit: u.id, verdict: &v, done: done, results: len(u.results), adaptive: ad})
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
// validated under its quorum: an adaptive unit's quorum is 1 once its
// result was accepted alone (AdaptiveSingle), else 2, as a unit of 2
// copies. done reports a verdict only a new result can change; another
// that the results disagree (or an adaptive unit is replicated) and
// another copy is due.
func decideUnit(u *unitState, eq Equal, maxCopies int) (v Verdict, done, another bool) {
	if u.status == UnitValid {
		v = Regrade(u.results, u.canonical, eq)
		return v, len(v.Valid) >= len(u.results), false
	}
	asked, quorum := u.asked, Quorum(u.asked)
	if u.adaptive {
		asked, quorum = 2, 2
		if u.decision == AdaptiveSingle {
			quorum = 1
		}
	}
	v = Validate(u.results, u.issued, quorum, eq)
	if maxCopies == 0 {
		maxCopies = asked + 2
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
	place    []byte    // its place key (job.PlaceKey), where a lookup looks; nil: key
}

// placeKey is the key f's job is looked up by: its place, else its key.
func (f *found) placeKey() []byte { return job.LookupKey(f.key, f.place) }

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
			if nodes, err = p.a.DHT().ClosestPeers(dht.WithPurpose(ctx, dht.PurposeHarvest), f.placeKey()); err != nil {
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
	// One signature per pass (job.SignCollectedBatch: the root of a
	// Merkle tree of the pass's collect statements), each job's proof
	// carrying its inclusion path: nodes check a path with a few hashes
	// and the root's signature once per batch.
	keys := make([][]byte, len(jobs))
	for i, f := range jobs {
		keys[i] = f.key
	}
	batch, err := job.SignCollectedBatch(keys, at, p.a.Identity().Key)
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Errorf("sign the collect batch: %w", err))
		return nil
	}
	proofs := make([][]byte, len(jobs))
	for i := range batch {
		proofs[i] = batch[i].Encode()
	}
	var mu sync.Mutex
	eachNode(byNode, func(n peer.ID, idx []int) {
		for start := 0; start < len(idx) && ctx.Err() == nil; start += wire.MaxSyncItems {
			part := idx[start:min(start+wire.MaxSyncItems, len(idx))]
			req := &wire.CollectRequest{At: at}
			for _, i := range part {
				req.Keys = append(req.Keys, jobs[i].key)
				req.Proofs = append(req.Proofs, proofs[i])
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
