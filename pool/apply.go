package pool

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/store"
)

// applyFrom merges a state another party sent (src) with its proof, once
// the proof makes it true (checkProof): a state that would change the
// replica without valid proof is refused, and, when the proof is missing
// or forged, counted against its sender and kept as evidence. envBytes is
// the result envelope of a finished state when the sender gave it. A
// refused state returns the held one (unexpired, and as judged here).
func (p *Pool) applyFrom(key []byte, st job.State, proof, envBytes []byte, src *source) (merged, view job.State, err error) {
	e, now, err := p.lockEntry(key, st)
	if err != nil {
		return job.State{}, job.State{}, err
	}
	held := e.state
	changes := !job.Equal(job.ReceiveRenewed(held, st, now, e.tFinish, p.cfg.TSkew.Milliseconds(), e.renewal), held)
	// The proof of a claim held here without one (certificate after confirm).
	adopt := !changes && p.cfg.ClaimCheck != nil && len(e.proof) == 0 && len(proof) > 0 && job.Equal(held, st) && job.NeedsProof(st)
	info := jobInfo{certRef: e.certRef, project: e.project, tFinish: e.tFinish, pos: e.pos}
	heldView := p.view(e, now)
	p.mu.Unlock()
	if !changes && !adopt {
		return held, heldView, nil
	}
	if err := p.checkProof(key, info, st, proof, envBytes); err != nil {
		if r := (*refusal)(nil); errors.As(err, &r) {
			p.refuseForgery(src, key, st, proof, r)
		}
		return held, heldView, fmt.Errorf("job %x: %s state from %s: %w", key, st.Phase, src, err)
	}
	var envelope *storeWrite
	if st.Phase == job.Finished && len(envBytes) > 0 && p.heldEnvelope(key, st.Result) == nil {
		envelope = &storeWrite{key: store.Key(resultNS, key), value: envBytes}
	}
	if adopt {
		return p.adoptProof(key, st, proof, envelope)
	}
	return p.applyWith(key, st, proof, envelope)
}

// storeWrite is the result envelope a finished state names, written with
// the state (applyWith, adoptProof): in the state's batch when the state
// changes, so the two go to disk together; when it does not, alone, and
// only beside the finished state it belongs to (putAlone) — an envelope
// lost here, or never stored, comes back; one of a state that lost a race
// is not kept.
type storeWrite struct{ key, value []byte }

// putAlone writes w on its own when held, the state that stayed, is the
// finished state whose result digest is digest; nothing else, nor for
// nil.
func (w *storeWrite) putAlone(st *store.Store, key []byte, held job.State, digest []byte) error {
	if w == nil || held.Phase != job.Finished || !bytes.Equal(held.Result, digest) {
		return nil
	}
	if err := st.Put(w.key, w.value); err != nil {
		return fmt.Errorf("job %x: store result: %w", key, err)
	}
	return nil
}

// apply merges st (with its proof, kept if st wins) and returns the
// merged state unexpired as well.
func (p *Pool) apply(key []byte, st job.State, proof []byte) (merged, view job.State, err error) {
	return p.applyWith(key, st, proof, nil)
}

// applyWith is apply with the result envelope st names (envelope; nil:
// none) written as storeWrite says.
func (p *Pool) applyWith(key []byte, st job.State, proof []byte, envelope *storeWrite) (merged, view job.State, err error) {
	e, now, err := p.lockEntry(key, st)
	if err != nil {
		return job.State{}, job.State{}, err
	}
	merged = job.ReceiveRenewed(e.state, st, now, e.tFinish, p.cfg.TSkew.Milliseconds(), e.renewal)
	if job.Equal(merged, e.state) {
		view = p.view(e, now)
		p.mu.Unlock()
		return merged, view, envelope.putAlone(p.st, key, merged, st.Result)
	}
	err = p.persistLocked(key, e, merged, proof, envelope)
	view = p.view(e, now)
	e.lapsed = e.state.Phase == job.Claimed && view.Phase != job.Claimed
	p.mu.Unlock()
	if err != nil {
		return job.State{}, job.State{}, err
	}
	p.notify(change{key: key, st: view})
	return merged, view, nil
}

// persistLocked writes a held job's new state with its proof (under
// stateNS, the job's record untouched) and the result envelope it names
// (envelope; nil: none) in one batch, deleting a proof stored apart
// before. p.mu is held.
func (p *Pool) persistLocked(key []byte, e *entry, st job.State, proof []byte, envelope *storeWrite) error {
	k := store.Key(stateNS, key)
	b, err := encodeStateRecord(&stateRecord{State: st, Responsible: e.responsible, Proof: proof})
	if err != nil {
		return fmt.Errorf("job %x: %w", key, err)
	}
	if envelope == nil && !e.proofApart {
		if err := p.st.Put(k, b); err != nil {
			return err
		}
		e.state, e.proof = st, proof
		return nil
	}
	batch := p.st.NewBatch()
	if envelope != nil {
		batch.Put(envelope.key, envelope.value)
	}
	batch.Put(k, b)
	if e.proofApart {
		batch.Delete(store.Key(proofNS, key))
	}
	if err := batch.Commit(true); err != nil {
		return fmt.Errorf("job %x: %w", key, err)
	}
	e.state, e.proof, e.proofApart = st, proof, false
	return nil
}
