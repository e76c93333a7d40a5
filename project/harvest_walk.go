package project

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// Walking the index of finished jobs is retried when it fails (a node
// that dropped the stream, a routing table left empty for a moment: "walk
// to ...: no node known"): up to indexAttempts walks, waiting
// DefaultWalkBackoff, then twice as long, between them.
const indexAttempts = 3

// DefaultWalkBackoff is the wait before the first retry of a failed walk
// of the index: 1 s.
const DefaultWalkBackoff = time.Second

// SetWalkBackoff sets the wait before the first retry of a failed walk
// of the index (doubling for the next).
func (p *Project) SetWalkBackoff(d time.Duration) { p.walkBackoff = d }

// finishedJobs are the project's finished jobs a walk of the index found,
// by what a harvest does with them.
type finishedJobs struct {
	fetch   []found         // results not in the ledger yet
	confirm []found         // results in the ledger the nodes still list
	listed  map[string]bool // jobs in confirm
}

// indexHarvest walks the index region of keyword, calling visit with each
// page of entries: the agent's index client, or a test's stand-in.
func (p *Project) indexHarvest(ctx context.Context, keyword string, pageSize int, visit func([]wire.IndexHit) error) error {
	if p.harvestIndex != nil {
		return p.harvestIndex(ctx, keyword, pageSize, visit)
	}
	_, err := p.a.Index().Harvest(ctx, keyword, pageSize, visit)
	return err
}

// walkFinished walks the index of "<project>:finished" and sorts what it
// lists by the ledger's state of each job, retrying a walk that failed
// (the entries a failed walk delivered are kept). A walk that still fails
// is recorded in rep.IndexErr and rep.Errors; err is the ledger's.
func (p *Project) walkFinished(ctx context.Context, l *Ledger, pageSize int, rep *HarvestReport) (finishedJobs, error) {
	w := finishedJobs{listed: map[string]bool{}}
	keyword := job.FinishedKeyword(p.Name())
	seen := map[string]bool{} // across the attempts
	var ledgerErr error
	visit := func(hits []wire.IndexHit) error {
		page := make([]found, 0, len(hits))
		cids := make([]string, 0, len(hits))
		for _, h := range hits {
			c, err := cid.Cast(h.Job)
			if err != nil || seen[c.String()] {
				continue
			}
			f := found{key: h.Job, cid: c.String(), place: job.PlaceKey(h.Job, h.Place)}
			seen[f.cid] = true
			for _, r := range h.Replicas {
				f.replicas = append(f.replicas, peer.ID(r))
			}
			rep.Finished++
			page = append(page, f)
			cids = append(cids, f.cid)
		}
		states, err := l.states(cids)
		if err != nil {
			ledgerErr = fmt.Errorf("ledger state of %d jobs: %w", len(cids), err)
			return ledgerErr
		}
		for _, f := range page {
			switch states[f.cid] {
			case StatePrepared, StateSubmitted:
				w.fetch = append(w.fetch, f)
			case StateHarvested, StateCollected, StateLost:
				// The nodes still list it: tell them again. A lost job's
				// result that showed up late is not fetched: its unit got
				// another copy.
				w.confirm = append(w.confirm, f)
				w.listed[f.cid] = true
			}
		}
		return nil
	}
	backoff := p.walkBackoff
	if backoff <= 0 {
		backoff = DefaultWalkBackoff
	}
	for attempt := 1; ; attempt++ {
		err := p.indexHarvest(ctx, keyword, pageSize, visit)
		switch {
		case err == nil:
			return w, nil
		case ledgerErr != nil:
			return w, ledgerErr
		case ctx.Err() != nil:
			rep.Errors = append(rep.Errors, fmt.Errorf("harvest index %q: %w", keyword, err))
			return w, nil
		case attempt == indexAttempts:
			rep.IndexErr = fmt.Errorf("read the index %q (%d attempts): %w", keyword, attempt, err)
			rep.Errors = append(rep.Errors, rep.IndexErr)
			return w, nil
		}
		p.a.Logger().Info("walk of the index failed: retrying", "keyword", keyword, "attempt", attempt, "in", backoff, "err", err)
		if !sleepCtx(ctx, backoff) {
			rep.Errors = append(rep.Errors, fmt.Errorf("harvest index %q: %w", keyword, errors.Join(err, ctx.Err())))
			return w, nil
		}
		backoff *= 2
	}
}

// sleepCtx waits d, or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
