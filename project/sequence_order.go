package project

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// Ordered is what ordering a sequence did.
type Ordered struct {
	Nodes int      // the sequence's closest nodes asked
	Took  int      // those that applied the order
	Steps []uint16 // the length each of those answered (at least the newest checkpoint's step)
}

// OrderSequence ends or extends the sequence jobID (its CID), a job of
// ledger l: from now on it has steps steps — fewer than it had ends it
// after that step (or after the newest checkpoint, whichever is later),
// more extends it. The project signs the order (its revision its clock's
// Unix ms, so a later order replaces an earlier) and sends it to the
// job's r closest nodes (those of its place, from the listing the ledger
// keeps); the client running the sequence learns it with its next
// checkpoint's acknowledgements and stops or goes on
// (job.MajorityAtLeast of them). It fails unless a majority applied it.
func (p *Project) OrderSequence(ctx context.Context, l *Ledger, jobID string, steps uint16) (Ordered, error) {
	var out Ordered
	key, err := cid.Decode(jobID)
	if err != nil {
		return out, fmt.Errorf("order sequence %q: %w", jobID, err)
	}
	if steps == 0 || steps > job.MaxSteps {
		return out, fmt.Errorf("order sequence %s: %d steps, want 1..%d", jobID, steps, job.MaxSteps)
	}
	kb := key.Bytes()
	rev := uint64(p.a.Now().UnixMilli())
	req := &wire.SequenceOrder{Key: kb, Steps: steps, Rev: rev,
		Sig: ed25519.Sign(p.a.Identity().Key, job.OrderStatement(kb, steps, rev))}
	place, err := l.placeOf(key.String())
	if err != nil {
		return out, fmt.Errorf("order sequence %s: %w", jobID, err)
	}
	nodes, err := p.a.DHT().ClosestPeers(ctx, place)
	if err != nil {
		return out, fmt.Errorf("order sequence %s: find its nodes: %w", jobID, err)
	}
	out.Nodes = len(nodes)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var ack wire.CheckpointAck
			err := p.a.Endpoint().Call(cctx, n, wire.ProtoSequenceOrder, req, 64, &ack)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", n, err))
				return
			}
			out.Took++
			out.Steps = append(out.Steps, ack.Steps)
		}()
	}
	wg.Wait()
	if need := len(nodes)/2 + 1; out.Took < need {
		return out, fmt.Errorf("order sequence %s: %d of %d nodes applied it, want %d: %w", jobID, out.Took, len(nodes), need, errors.Join(errs...))
	}
	return out, nil
}
