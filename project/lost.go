package project

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
)

// DefaultLostAfter is T_lost, the default HarvestOptions.LostAfter: 1 h,
// two republish periods (20–30 min each) and a margin, so every live
// holder of a job has synced its state, and fetched a result another
// holder kept, at least once before the job is declared lost.
const DefaultLostAfter = time.Hour

// lossEvidence is what a job's closest nodes (the project's own lookup)
// said when none of them served a good copy of its result.
type lossEvidence struct {
	asked    int      // the job's closest nodes
	answered int      // of them, those that answered (with or without a copy)
	live     []string // of them, those holding the job ready or claimed ("node X: ready")
	done     bool     // one of them holds the job finished or collected
}

// evidence is what the closest nodes said, from the trace of a fetch that
// asked them (a node that did not answer says nothing).
func (tr *fetchTrace) evidence(closest []peer.ID) lossEvidence {
	e := lossEvidence{asked: len(closest)}
	for _, n := range closest {
		s, ok := tr.said[n]
		if !ok || !s.answered {
			continue
		}
		e.answered++
		if !s.holds {
			continue
		}
		switch s.phase {
		case job.Finished, job.Collected:
			e.done = true
		default: // ready, claimed: the job may still run
			e.live = append(e.live, fmt.Sprintf("node %s: %s", n, s.phase))
		}
	}
	return e
}

// unservable reports whether e counts toward declaring the job lost: a
// majority of its closest nodes answered and none served a good copy
// (the caller's premise), and none holds the job ready or claimed — unless
// one holds it finished or collected, which outrank ready and claimed in
// every honest merge, so a live state beside them is a replica behind its
// republish or a liar's, not a job that may still run. Pure.
func (e lossEvidence) unservable() bool {
	return e.asked > 0 && 2*e.answered > e.asked && (len(e.live) == 0 || e.done)
}

// lostDue reports whether a job no node has served since since is lost
// at now, after lostAfter. Pure; times on the project's clock.
func lostDue(since, now time.Time, lostAfter time.Duration) bool {
	return !now.Before(since.Add(lostAfter))
}

// unserved is a job listed finished whose result no node served in a
// form that opens and verifies.
type unserved struct {
	found
	err      error
	evidence *lossEvidence // nil: its closest nodes were not asked
}

// judgeUnserved decides what becomes of the jobs no node served: one its
// closest nodes call unservable (lossEvidence.unservable) starts, or goes
// on with, its loss timer (Ledger.Unservable); one they hold live has it
// stopped; one whose timer has run opts.LostAfter is declared lost
// (declareLost) and returned, to be told collected. Every other job is
// refused, its error saying which of these it is.
func (p *Project) judgeUnserved(ctx context.Context, l *Ledger, jobs []unserved, opts HarvestOptions, rep *HarvestReport) ([]found, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	lostAfter := opts.LostAfter
	if lostAfter <= 0 {
		lostAfter = DefaultLostAfter
	}
	now := p.a.Now()
	var candidates, live []string
	for _, u := range jobs {
		switch {
		case u.evidence == nil:
		case u.evidence.unservable():
			candidates = append(candidates, u.cid)
		case len(u.evidence.live) > 0:
			live = append(live, u.cid)
		}
	}
	if err := l.ClearUnservable(live); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	since, err := l.Unservable(candidates, now)
	if err != nil {
		return nil, err
	}
	var due []found
	for _, u := range jobs {
		s, timed := since[u.cid]
		if timed && lostDue(s, now, lostAfter) {
			due = append(due, u.found)
			continue
		}
		why := ""
		switch {
		case timed:
			why = fmt.Sprintf(" (no node has served it since %s: declared lost at %s)", s.Format(time.RFC3339), s.Add(lostAfter).Format(time.RFC3339))
		case u.evidence != nil && len(u.evidence.live) > 0:
			why = fmt.Sprintf(" (not lost: %s)", strings.Join(u.evidence.live, ", "))
		}
		rep.Refused++
		rep.Errors = append(rep.Errors, fmt.Errorf("job %s: %w%s", u.cid, u.err, why))
	}
	return p.declareLost(ctx, l, due, rep)
}

// declareLost declares jobs lost: it signs another copy of each one's
// unit that has no canonical result yet (as for an inconclusive unit:
// newCopy), records the jobs lost with their copies in one synced
// transaction, and submits the copies; it returns the jobs declared, whose
// nodes the caller tells they are collected (the project-signed collect),
// so replicas that hold them finished delete them and refuse a late copy.
// A job whose copy cannot be signed is left for the next harvest.
func (p *Project) declareLost(ctx context.Context, l *Ledger, jobs []found, rep *HarvestReport) ([]found, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	cids := make([]string, len(jobs))
	for i, f := range jobs {
		cids[i] = f.cid
	}
	units, err := l.unitsToReissue(cids)
	if err != nil {
		return nil, err
	}
	var lost []lostJob
	preps := map[string]*Prepared{}
	for _, f := range jobs {
		lj := lostJob{cid: f.cid}
		if unit, ok := units[f.cid]; ok {
			pj, prep, err := p.newCopy(l, unit)
			if err != nil {
				rep.Refused++
				rep.Errors = append(rep.Errors, fmt.Errorf("job %s: lost, but another copy of unit %d: %w", f.cid, unit, err))
				continue
			}
			lj.copy, preps[f.cid] = &pj, prep
		}
		lost = append(lost, lj)
	}
	declared, err := l.declareLost(lost, p.a.Now())
	if err != nil {
		return nil, err
	}
	in := map[string]bool{}
	var send []*Prepared
	for _, c := range declared {
		in[c] = true
		if prep := preps[c]; prep != nil {
			send = append(send, prep)
		}
	}
	rep.Lost += len(declared)
	for i, err := range p.sendCopies(ctx, l, send) {
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("copy %s replacing a lost job: %w (recorded: submitting its batch again sends it)", send[i].cidString(), err))
		}
	}
	var out []found
	for _, f := range jobs {
		if in[f.cid] {
			out = append(out, f)
		}
	}
	return out, nil
}
