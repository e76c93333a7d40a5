package project

import (
	"context"
	"fmt"
	"strings"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// TrickleReport is what HarvestTrickles did.
type TrickleReport struct {
	Listed   int      // jobs listed under "<project>:trickle"
	Recorded int      // trickles newly recorded
	Credit   float64  // partial credit granted for them, in steps
	Errors   []string // what failed, per job or node
}

// trickleStepCredit is the partial credit of one reported step, in
// results: a sequence's final result earns 1 like any result; each step
// on the way earns this much.
const trickleStepCredit = 0.05

// HarvestTrickles walks "<project>:trickle", fetches from each listed
// job's replicas the trickles they hold (sealed progress reports of a
// running sequence), opens and verifies each (the client's signature and
// certificate, of this job), records it in the ledger once per (job,
// step, client) with its partial credit, and tells the replicas that
// gave them the steps recorded so they drop them and withdraw the entry.
func (p *Project) HarvestTrickles(ctx context.Context, l *Ledger, pageSize int) (TrickleReport, error) {
	var rep TrickleReport
	type listed struct {
		key      []byte
		replicas []peer.ID
	}
	var jobs []listed
	err := p.indexHarvest(ctx, job.TrickleKeyword(p.Name()), max(pageSize, 1), func(hits []wire.IndexHit) error {
		for _, h := range hits {
			j := listed{key: h.Job}
			for _, r := range h.Replicas {
				j.replicas = append(j.replicas, peer.ID(r))
			}
			jobs = append(jobs, j)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("walk %s: %w", job.TrickleKeyword(p.Name()), err)
	}
	rep.Listed = len(jobs)
	for _, j := range jobs {
		for _, n := range j.replicas {
			if err := p.trickleFrom(ctx, l, n, j.key, &rep); err != nil {
				rep.Errors = append(rep.Errors, err.Error())
			}
		}
	}
	return rep, nil
}

// trickleFrom fetches, records and collects one job's trickles at node n.
func (p *Project) trickleFrom(ctx context.Context, l *Ledger, n peer.ID, key []byte, rep *TrickleReport) error {
	c, err := cid.Cast(key)
	if err != nil {
		return fmt.Errorf("trickle of job %x: %w", key, err)
	}
	var resp wire.TrickleGetResponse
	if err := p.a.Endpoint().Call(ctx, n, wire.ProtoTrickleGet, &wire.TrickleGetRequest{Keys: [][]byte{key}}, wire.MaxTrickleFrame, &resp); err != nil {
		return fmt.Errorf("trickles of job %s from %s: %w", c, n, err)
	}
	if len(resp.Trickles) == 0 || len(resp.Trickles[0]) == 0 {
		return nil
	}
	o := p.opener()
	var upTo uint16
	for _, b := range resp.Trickles[0] {
		r, err := o.open(b, key)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("trickle of job %s from %s: %v", c, n, err))
			continue
		}
		step, ok := trickleStep(r.Error)
		if !ok {
			rep.Errors = append(rep.Errors, fmt.Sprintf("trickle of job %s from %s: not a trickle (%q)", c, n, r.Error))
			continue
		}
		isNew, err := l.recordTrickle(Trickle{CID: c.String(), Step: int(step), Client: r.Client, ClientKey: r.ClientKey,
			Progress: strings.TrimSpace(string(r.Output)), CPUMS: r.CPU.Milliseconds(), At: r.At.UnixMilli(), Credit: trickleStepCredit}, p.a.Now().UnixMilli())
		if err != nil {
			return err // not collected: the next harvest fetches it again
		}
		if isNew {
			rep.Recorded++
			rep.Credit += trickleStepCredit
		}
		upTo = max(upTo, step)
	}
	if upTo == 0 {
		return nil
	}
	if err := p.a.Endpoint().Call(ctx, n, wire.ProtoTrickleCollect, &wire.TrickleCollect{Key: key, UpTo: upTo}, 1024, &wire.Ping{}); err != nil {
		return fmt.Errorf("collect trickles of job %s at %s: %w", c, n, err)
	}
	return nil
}

// trickleStep is the step a trickle's Error ("trickle: step k of n")
// reports; false when it is no trickle.
func trickleStep(errText string) (uint16, bool) {
	var step, of uint16
	rest, ok := strings.CutPrefix(errText, "trickle: ")
	if !ok {
		return 0, false
	}
	if _, err := fmt.Sscanf(rest, "step %d of %d", &step, &of); err != nil || step == 0 || step > of {
		return 0, false
	}
	return step, true
}
