package project

import (
	"fmt"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// countReceipts adds to out[idx[j]].signers the node certificates whose
// receipts in resp prove they store job jobs[idx[j]] (the request's j-th):
// each receipt's certificate verified once as a node's, its account
// signature over the keys it names checked. A receipt that fails is
// skipped: the first node that sent it proves nothing by it, and the
// jobs it names need receipts from others.
func (p *Project) countReceipts(resp *wire.StoreResponse, jobs []*Prepared, idx []int, out []Submitted) []error {
	v := p.a.Endpoint().Admission().Verifier()
	now := p.a.Now()
	var errs []error
	keys := make([][]byte, 0, len(idx))
	for _, rc := range resp.Receipts {
		id, err := v.VerifyCert(rc.Cert, now, certs.RoleNode)
		if err != nil {
			errs = append(errs, fmt.Errorf("store receipt: %w", err))
			continue
		}
		keys = keys[:0]
		for _, j := range rc.Jobs {
			if int(j) >= len(idx) {
				break
			}
			keys = append(keys, jobs[idx[j]].Key())
		}
		if len(keys) < len(rc.Jobs) {
			errs = append(errs, fmt.Errorf("store receipt of node %q names a job not sent: %w", id.Name, wire.ErrMalformed))
			continue
		}
		if err := job.VerifyReceipt(id.PublicKey, keys, rc.Sig); err != nil {
			errs = append(errs, fmt.Errorf("store receipt of node %q for %d jobs: %w", id.Name, len(keys), err))
			continue
		}
		for _, j := range rc.Jobs {
			s := &out[idx[j]]
			if s.signers == nil {
				s.signers = map[string]bool{}
			}
			s.signers[string(id.PublicKey)] = true
		}
	}
	return errs
}
