package project

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

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

// creditDue reports whether a harvest issues credit receipts: the first
// of this Project, or every (default DefaultCreditEvery) after the last
// issue, on the project's clock.
func (p *Project) creditDue(every time.Duration) bool {
	if every == 0 {
		every = DefaultCreditEvery
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.a.Now()
	return p.creditAt.IsZero() || every < 0 || now.Sub(p.creditAt) >= every || now.Before(p.creditAt)
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
	p.mu.Lock()
	p.creditAt = p.a.Now()
	clear(p.recordedSince) // every client's receipt is issued now
	p.mu.Unlock()
	n, err := l.IssueReceipts(p.signReceipt, p.a.Now())
	out.Issued = n
	if err != nil {
		return out, err
	}
	pending, err := l.UnpublishedReceipts(publishPage)
	if err != nil {
		return out, err
	}
	return out, p.publishReceipts(ctx, l, pending, &out)
}

// issueEarly signs and publishes, between two issues on the credit's
// schedule, the receipts of those of clients (the clients whose results
// this harvest recorded) owed at least least valid results' credit: a
// productive client's quota grows with its receipts (quota.Book), so
// waiting CreditEvery holds it to small claim groups; one receipt per
// least results keeps each receipt's publication (a lookup and r
// stores) a small share of those results' cost.
func (p *Project) issueEarly(ctx context.Context, l *Ledger, clients [][]byte, least int) (Credited, error) {
	var out Credited
	owed, err := l.ClientsOwedCredit(p.mayBeOwed(clients, least), least)
	if err != nil || len(owed) == 0 {
		return out, err
	}
	var pending []UnpublishedReceipt
	for _, c := range owed {
		n, err := l.IssueReceiptsTo(c, p.signReceipt, p.a.Now())
		out.Issued += n
		if err != nil {
			return out, err
		}
		p.mu.Lock()
		delete(p.recordedSince, string(c))
		p.mu.Unlock()
		un, err := l.UnpublishedReceiptsOf(c, publishPage)
		if err != nil {
			return out, err
		}
		pending = append(pending, un...)
	}
	return out, p.publishReceipts(ctx, l, pending, &out)
}

// countRecorded adds the results a harvest recorded to their clients'
// counts since their last receipt (recordedSince).
func (p *Project) countRecorded(clients [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.recordedSince == nil {
		p.recordedSince = map[string]int{}
	}
	for _, c := range clients {
		p.recordedSince[string(c)]++
	}
}

// mayBeOwed returns those of clients (repeats once) with at least least
// results recorded since their last receipt: only they can be owed that
// many valid ones.
func (p *Project) mayBeOwed(clients [][]byte, least int) [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]byte
	seen := map[string]bool{}
	for _, c := range clients {
		if !seen[string(c)] && p.recordedSince[string(c)] >= least {
			seen[string(c)] = true
			out = append(out, c)
		}
	}
	return out
}

// publishReceipts publishes pending (by client, then sequence number) on
// the r nodes closest to each client's credit key, one client at a time,
// and marks those a majority took; it counts them in out. A failed
// publication is retried by the next issue.
func (p *Project) publishReceipts(ctx context.Context, l *Ledger, pending []UnpublishedReceipt, out *Credited) error {
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
			return err
		}
		out.Published += len(seqs)
		out.Clients++
	}
	if len(errs) > 0 {
		return fmt.Errorf("publish credit receipts of %d clients (retried by the next harvest): %w", len(errs), errors.Join(errs...))
	}
	return nil
}
