package pool

import "github.com/up-pool/up/store"

// RecordForTests returns the stored record of held job key (signed spec,
// listing, the state it was accepted in) as encoded on disk.
func (p *Pool) RecordForTests(key []byte) ([]byte, error) {
	return p.st.Get(store.Key(jobNS, key))
}
