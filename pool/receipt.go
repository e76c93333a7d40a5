package pool

import (
	"crypto/ed25519"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// Account is the node identity that signs store receipts: its node
// certificate (DER) and the certificate's account key.
type Account struct {
	Cert []byte
	Key  ed25519.PrivateKey
}

// receipt signs this node's receipt for the jobs keys[idx], naming them
// by the indexes at[idx[n]]; ok false when the node has no account or
// nothing to sign.
func (p *Pool) receipt(keys [][]byte, idx []int, at []int) (wire.StoreReceipt, bool) {
	a := p.account
	if a == nil || len(idx) == 0 {
		return wire.StoreReceipt{}, false
	}
	signed := make([][]byte, len(idx))
	jobs := make([]uint16, len(idx))
	for n, i := range idx {
		signed[n] = keys[i]
		jobs[n] = uint16(at[i])
	}
	return wire.StoreReceipt{Cert: a.Cert, Jobs: jobs, Sig: job.SignReceipt(a.Key, signed)}, true
}
