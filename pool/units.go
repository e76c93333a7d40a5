package pool

import (
	"bytes"

	"github.com/up-pool/up/job"
)

// hold keeps e as the entry of job key and indexes it by its unit. Called
// with p.mu held.
func (p *Pool) hold(key string, e *entry) {
	if old, ok := p.jobs[key]; ok {
		p.close.drop(old)
	}
	p.jobs[key] = e
	p.close.add(key, e, len(p.jobs))
	keys := p.units[e.unit]
	if keys == nil {
		keys = make(map[string]struct{}, 1)
		p.units[e.unit] = keys
	}
	keys[key] = struct{}{}
}

// unhold forgets job key and its place in the unit index. Called with
// p.mu held.
func (p *Pool) unhold(key string) {
	e, ok := p.jobs[key]
	if !ok {
		return
	}
	delete(p.jobs, key)
	p.close.drop(e)
	if keys := p.units[e.unit]; keys != nil {
		delete(keys, key)
		if len(keys) == 0 {
			delete(p.units, e.unit)
		}
	}
}

// OtherCopyHeldBy reports whether this node holds another copy of job
// key's unit (job.Spec.UnitKey) that client has claimed (a claim live on
// this node's clock), finished or had collected: a replica that sees it
// refuses the client this copy (claim.Decide), since a redundant copy must
// come from another client. It sees only the copies it holds — copies land
// apart by their nonces — so this is a first line; the project's one
// credit per client per unit is the guarantee.
func (p *Pool) OtherCopyHeldBy(key, client []byte) bool {
	now := p.nowMS()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(key)]
	if !ok {
		return false
	}
	for other := range p.units[e.unit] {
		if other == string(key) {
			continue
		}
		o, ok := p.jobs[other]
		if !ok {
			continue
		}
		st := p.view(o, now)
		switch st.Phase {
		case job.Claimed, job.Finished, job.Collected:
			if bytes.Equal(st.Client, client) {
				return true
			}
		}
	}
	return false
}
