package pool

import "github.com/up-pool/up/store"

// RecordForTests returns the stored record of held job key (signed spec,
// listing, the state it was accepted in) as encoded on disk.
func (p *Pool) RecordForTests(key []byte) ([]byte, error) {
	return p.st.Get(store.Key(jobNS, key))
}

// CertForTests is certFor: a held job's CertRef and certificate, found
// from the spec signed when the job is no longer held.
func (p *Pool) CertForTests(key, signed []byte) (string, []byte, bool) {
	return p.certFor(key, signed)
}

// DropEnvelopeForTests deletes the stored result envelope of job key,
// as a store that lost it would.
func (p *Pool) DropEnvelopeForTests(key []byte) error {
	return p.st.Delete(store.Key(resultNS, key))
}

// SetExpireBatchForTests sets the most jobs one expiry commit deletes and
// returns the old value.
func SetExpireBatchForTests(n int) int {
	old := expireBatch
	expireBatch = n
	return old
}

// GoneForTests reports whether key has a gone record in force at now (ms).
func (p *Pool) GoneForTests(key []byte, now int64) bool {
	_, _, ok := p.gone(key, now)
	return ok
}

// ProofApartForTests returns the proof stored apart from key's state
// (proofNS, the layout before proofs went into state records), nil when
// none.
func (p *Pool) ProofApartForTests(key []byte) []byte {
	b, err := p.st.Get(store.Key(proofNS, key))
	if err != nil {
		return nil
	}
	return b
}

// WriteOldProofForTests rewrites key's state and proof on disk as nodes
// wrote them before proofs went into state records: the state record
// without its proof, the proof under proofNS.
func (p *Pool) WriteOldProofForTests(key []byte) error {
	p.mu.Lock()
	e := p.jobs[string(key)]
	p.mu.Unlock()
	rec, err := encodeStateRecord(&stateRecord{State: e.state, Responsible: e.responsible})
	if err != nil {
		return err
	}
	b := p.st.NewBatch()
	b.Put(store.Key(stateNS, key), rec)
	b.Put(store.Key(proofNS, key), e.proof)
	return b.Commit(true)
}
