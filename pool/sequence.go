package pool

import (
	"bytes"
	"context"
	"fmt"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

// Store key namespaces of sequences: a job's newest checkpoint, and the
// trickles its checkpoints carried that the project has not collected.
const (
	ckptNS    = "ckpt"
	trickleNS = "trickle"
)

// heldTrickle is a trickle as a replica keeps it: the step whose
// checkpoint carried it and its sealed bytes.
type heldTrickle struct {
	_      struct{} `cbor:",toarray"`
	Step   uint16
	Sealed []byte
}

func (p *Pool) registerSequenceProtocols() {
	p.ep.Handle(wire.ProtoCheckpointPut, wire.MaxCheckpointFrame, []certs.Role{certs.RoleClient}, p.handleCheckpointPut)
	p.ep.Handle(wire.ProtoCheckpointGet, 4<<10, nil, p.handleCheckpointGet)
	p.ep.Handle(wire.ProtoTrickleGet, 64<<10, []certs.Role{certs.RoleProject}, p.handleTrickleGet)
	p.ep.Handle(wire.ProtoTrickleCollect, 4<<10, []certs.Role{certs.RoleProject}, p.handleTrickleCollect)
	p.ep.Handle(wire.ProtoSequenceOrder, 4<<10, []certs.Role{certs.RoleProject}, p.handleOrder)
}

func (p *Pool) handleCheckpointPut(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.CheckpointPut
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	steps, err := p.PutCheckpoint(from.Identity.PublicKey, req.Checkpoint)
	if err != nil {
		return nil, err
	}
	return &wire.CheckpointAck{Steps: steps}, nil
}

// PutCheckpoint stores a sequence's checkpoint sent by the client whose
// Ed25519 key is sender, and returns the sequence's step count. It takes
// only a checkpoint signed by the sender, under a client certificate of
// the CA naming that key, of the claim live here (same client and
// start, judged on this node's clock), of a step after the newest held
// and within the sequence: that checkpoint becomes the newest, renews
// the claim here (its deadline now + T_finish on this node's clock:
// job.LapseRenewed), and its trickle, if any, is held for the project.
// The same checkpoint again is acknowledged and renews nothing.
func (p *Pool) PutCheckpoint(sender []byte, b []byte) (uint16, error) {
	c, err := job.DecodeCheckpoint(b)
	if err != nil {
		return 0, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	if !bytes.Equal(c.Client, sender) {
		return 0, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("checkpoint of job %x names another client than its sender", c.Job))
	}
	if err := c.Verify(); err != nil {
		return 0, overlay.StatusErr(wire.StatusUnauthorized, err)
	}
	id, err := p.ep.Admission().Verifier().VerifyCert(c.Cert, p.env.Now(), certs.RoleClient)
	if err != nil || !bytes.Equal(id.PublicKey, c.Client) {
		return 0, overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("checkpoint of job %x: client certificate: %v", c.Job, err))
	}
	now := p.nowMS()
	p.mu.Lock()
	e, ok := p.jobs[string(c.Job)]
	if !ok {
		p.mu.Unlock()
		return 0, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("job %x not held here", c.Job))
	}
	steps, view := e.steps, p.view(e, now)
	if err := checkpointFits(c, e, view); err != nil {
		p.mu.Unlock()
		return steps, err
	}
	if c.Step == e.ckptStep && bytes.Equal(c.Client, e.renewal.Client) && c.Start == e.renewal.Start {
		p.mu.Unlock()
		return steps, nil // sent again
	}
	err = p.storeCheckpointLocked(e, c, b, now)
	p.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("job %x: store checkpoint: %w", c.Job, err)
	}
	if len(c.Trickle) > 0 {
		p.notify(change{key: c.Job, st: view})
	}
	return steps, nil
}

// checkpointFits refuses a checkpoint that is not of the sequence's
// claim live here (view), or not after the newest held. p.mu is held.
func checkpointFits(c *job.Checkpoint, e *entry, view job.State) error {
	switch {
	case e.steps == 0:
		return overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("job %x is no sequence", c.Job))
	case view.Phase != job.Claimed || !bytes.Equal(view.Client, c.Client) || view.Start != c.Start:
		return overlay.StatusErr(wire.StatusUnauthorized, fmt.Errorf("job %x is %s here, not claimed by this client at %d", c.Job, view.Phase, c.Start))
	case c.Step > e.steps:
		return overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("checkpoint of step %d of a %d-step sequence", c.Step, e.steps))
	case c.Step < e.ckptStep || c.Step == e.ckptStep && !(bytes.Equal(c.Client, e.renewal.Client) && c.Start == e.renewal.Start):
		return overlay.StatusErr(wire.StatusBadRequest, fmt.Errorf("checkpoint of step %d, the newest held is of step %d", c.Step, e.ckptStep))
	}
	return nil
}

// storeCheckpointLocked persists c (encoded b) as the job's newest
// checkpoint, with its trickle (the oldest dropped beyond
// wire.MaxTricklesHeld), and records the renewal at now. p.mu is held.
func (p *Pool) storeCheckpointLocked(e *entry, c *job.Checkpoint, b []byte, now int64) error {
	batch := p.st.NewBatch()
	batch.Put(store.Key(ckptNS, c.Job), b)
	var ts []heldTrickle
	if len(c.Trickle) > 0 {
		var err error
		if ts, err = p.trickles(c.Job); err != nil {
			return err
		}
		ts = append(ts, heldTrickle{Step: c.Step, Sealed: c.Trickle})
		if len(ts) > wire.MaxTricklesHeld {
			ts = ts[len(ts)-wire.MaxTricklesHeld:]
		}
		v, err := codec.Marshal(ts)
		if err != nil {
			return err
		}
		batch.Put(store.Key(trickleNS, c.Job), v)
	}
	if err := batch.Commit(true); err != nil {
		return err
	}
	e.ckptStep = c.Step
	e.renewal = job.Renewal{Client: c.Client, Start: c.Start, At: now}
	if len(c.Trickle) > 0 {
		e.trickles = len(ts)
	}
	return nil
}

// trickles reads the trickles held for a job.
func (p *Pool) trickles(key []byte) ([]heldTrickle, error) {
	v, err := p.st.Get(store.Key(trickleNS, key))
	if err != nil {
		return nil, nil // none held
	}
	var ts []heldTrickle
	if err := codec.Unmarshal(v, &ts); err != nil {
		return nil, fmt.Errorf("trickles of job %x: %w", key, err)
	}
	return ts, nil
}

// Checkpoint returns the newest checkpoint held for a job (encoded; nil
// when none) and the sequence's step count (0: not a sequence, or not
// held).
func (p *Pool) Checkpoint(key []byte) ([]byte, uint16) {
	p.mu.Lock()
	e, ok := p.jobs[string(key)]
	var steps uint16
	if ok {
		steps = e.steps
	}
	p.mu.Unlock()
	if !ok {
		return nil, 0
	}
	b, err := p.st.Get(store.Key(ckptNS, key))
	if err != nil {
		return nil, steps
	}
	return b, steps
}

func (p *Pool) handleCheckpointGet(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var req wire.CheckpointGetRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	b, steps := p.Checkpoint(req.Key)
	return &wire.CheckpointGetResponse{Checkpoint: b, Steps: steps}, nil
}

// ownJob reports whether a held job is of the named project.
func (p *Pool) ownJob(key []byte, project string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(key)]
	return ok && e.project == project
}

func (p *Pool) handleTrickleGet(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.TrickleGetRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	resp := &wire.TrickleGetResponse{Trickles: make([][][]byte, len(req.Keys))}
	for i, k := range req.Keys {
		if !p.ownJob(k, from.Identity.Name) {
			continue
		}
		ts, err := p.trickles(k)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			resp.Trickles[i] = append(resp.Trickles[i], t.Sealed)
		}
	}
	return resp, nil
}

func (p *Pool) handleTrickleCollect(_ context.Context, from *overlay.Admitted, body []byte) (any, error) {
	var req wire.TrickleCollect
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	if !p.ownJob(req.Key, from.Identity.Name) {
		return nil, overlay.StatusErr(wire.StatusNotFound, fmt.Errorf("job %x of project %q not held here", req.Key, from.Identity.Name))
	}
	if err := p.CollectTrickles(req.Key, req.UpTo); err != nil {
		return nil, err
	}
	return &wire.Ping{}, nil
}

// CollectTrickles drops a job's trickles of steps up to upTo: the
// project recorded them.
func (p *Pool) CollectTrickles(key []byte, upTo uint16) error {
	p.mu.Lock()
	e, ok := p.jobs[string(key)]
	if !ok {
		p.mu.Unlock()
		return nil
	}
	ts, err := p.trickles(key)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	kept := ts[:0]
	for _, t := range ts {
		if t.Step > upTo {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(ts) {
		p.mu.Unlock()
		return nil
	}
	if len(kept) == 0 {
		err = p.st.Delete(store.Key(trickleNS, key))
	} else {
		var v []byte
		if v, err = codec.Marshal(kept); err == nil {
			err = p.st.Put(store.Key(trickleNS, key), v)
		}
	}
	if err == nil {
		e.trickles = len(kept)
	}
	view := p.view(e, p.nowMS())
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("job %x: collect trickles: %w", key, err)
	}
	p.notify(change{key: key, st: view})
	return nil
}

// loadSequence restores what a restarted node knows of a held sequence:
// its newest checkpoint's step, its trickles, and, when that checkpoint
// is of the claim held, a renewal at now (the node does not know when it
// stored it; the claim lives a step longer here at most). p.mu is held
// or the pool not yet shared.
func (p *Pool) loadSequence(key string, e *entry, now int64) {
	if e.steps == 0 {
		return
	}
	if b, err := p.st.Get(store.Key(ckptNS, []byte(key))); err == nil {
		if c, err := job.DecodeCheckpoint(b); err == nil {
			e.ckptStep = c.Step
			if e.state.Phase == job.Claimed && e.state.Start == c.Start && bytes.Equal(e.state.Client, c.Client) {
				e.renewal = job.Renewal{Client: c.Client, Start: c.Start, At: now}
			}
		}
	}
	if ts, err := p.trickles([]byte(key)); err == nil {
		e.trickles = len(ts)
	}
	p.loadOrder(key, e)
}
