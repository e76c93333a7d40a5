package project

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/creditclient"
	"github.com/up-pool/up/job"
)

// publishPage bounds the receipts one harvest publishes: the clients of
// the rest are published by the next.
const publishPage = 4096

// signReceipt completes r with the project's name and certificate
// reference and signs it with the project's key.
func (p *Project) signReceipt(r *credit.Receipt) (*credit.Signed, error) {
	id := p.a.Identity()
	r.Project = id.Name
	r.CertRef = job.CertRef(id.Cert.Raw)
	return credit.Sign(r, id.Key, id.Cert.Raw)
}

// Credited is what issuing and publishing credit receipts did.
type Credited struct {
	Issued    int // receipts signed
	Published int // receipts the overlay took (a majority of the client's nodes)
	Clients   int // clients whose receipts were published
}

// IssueCredit signs a receipt per client for its results graded valid
// since its last (Ledger.IssueReceipts), then publishes every receipt not
// yet published on the r nodes closest to its client's credit key, one
// client at a time; a receipt is marked published once a majority of
// them took it. A failed publication is retried by the next call.
func (p *Project) IssueCredit(ctx context.Context, l *Ledger) (Credited, error) {
	var out Credited
	n, err := l.IssueReceipts(p.signReceipt, p.a.Now())
	out.Issued = n
	if err != nil {
		return out, err
	}
	pending, err := l.UnpublishedReceipts(publishPage)
	if err != nil {
		return out, err
	}
	var errs []error
	for start := 0; start < len(pending) && ctx.Err() == nil; {
		end := start + 1
		for end < len(pending) && string(pending[end].Client) == string(pending[start].Client) {
			end++
		}
		client := ed25519.PublicKey(pending[start].Client)
		encs := make([][]byte, 0, end-start)
		seqs := make([]uint64, 0, end-start)
		for _, u := range pending[start:end] {
			encs = append(encs, u.Signed)
			seqs = append(seqs, u.Seq)
		}
		start = end
		if _, err := creditclient.Publish(ctx, p.a.Endpoint(), p.a.DHT(), client, encs); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := l.MarkPublished(client, seqs, p.a.Now()); err != nil {
			return out, err
		}
		out.Published += len(seqs)
		out.Clients++
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("publish credit receipts of %d clients (retried by the next harvest): %w", len(errs), errors.Join(errs...))
	}
	return out, nil
}
