package node

import "github.com/up-pool/up/pool"

// EvidenceReport is what GET /evidence answers: the forgeries this node
// refused (states sent without valid proof), oldest first, the last
// pool.MaxEvidence at most, for a CA operator to act on by revocation.
type EvidenceReport struct {
	Role     string          `json:"role"` // "node"
	Records  []pool.Evidence `json:"records"`
	Capacity int             `json:"capacity"`
}

// Evidence returns the forgeries this node refused.
func (n *Node) Evidence() EvidenceReport {
	recs := n.Pool().Evidence()
	if recs == nil {
		recs = []pool.Evidence{}
	}
	return EvidenceReport{Role: "node", Records: recs, Capacity: pool.MaxEvidence}
}
