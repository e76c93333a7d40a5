package pool

import (
	"context"
	"fmt"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/sigverify"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// orderNS is the store namespace of sequence orders: a job's newest
// order, as its project signed it (wire.SequenceOrder, encoded).
const orderNS = "seqorder"

// handleOrder applies a project's signed order to end or extend one of
// its sequences held here.
func (p *Pool) handleOrder(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.SequenceOrder
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	if !p.ownJob(req.Key, from.Identity.Name) {
		return nil, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("job %x of project %q not held here", req.Key, from.Identity.Name))
	}
	if !sigverify.Verify(from.Identity.PublicKey, job.OrderStatement(req.Key, req.Steps, req.Rev), req.Sig) {
		return nil, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("sequence order of job %x: not signed by project %q", req.Key, from.Identity.Name))
	}
	steps, err := p.ApplyOrder(&req)
	if err != nil {
		return nil, err
	}
	return &wire.CheckpointAck{Steps: steps}, nil
}

// ApplyOrder makes a checked order the sequence's length here, unless an
// order of a later revision was applied: at least the newest
// checkpoint's step (what is done stays done). It persists the order and
// returns the length now.
func (p *Pool) ApplyOrder(o *wire.SequenceOrder) (uint16, error) {
	b, err := codec.Marshal(o)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(o.Key)]
	switch {
	case !ok:
		return 0, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("job %x not held here", o.Key))
	case e.steps == 0:
		return 0, overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("job %x is no sequence", o.Key))
	case o.Rev <= e.orderRev:
		return e.steps, nil // an older order, or this one again
	}
	if err := p.st.Put(store.Key(orderNS, o.Key), b); err != nil {
		return 0, fmt.Errorf("job %x: store sequence order: %w", o.Key, err)
	}
	e.orderRev, e.steps = o.Rev, max(o.Steps, e.ckptStep)
	return e.steps, nil
}

// loadOrder applies a stored order to a held sequence at load. p.mu is
// held or the pool not yet shared.
func (p *Pool) loadOrder(key string, e *entry) {
	b, err := p.st.Get(store.Key(orderNS, []byte(key)))
	if err != nil {
		return
	}
	var o wire.SequenceOrder
	if codec.Unmarshal(b, &o) != nil || o.Validate() != nil {
		return
	}
	e.orderRev, e.steps = o.Rev, max(o.Steps, e.ckptStep)
}
