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
