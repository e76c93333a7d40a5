package claimclient

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/wire"
)

// ResultItem is one result of a many-result delivery: the claim it
// finishes and its sealed envelope (encoded).
type ResultItem struct {
	Claim    *Claim
	Envelope []byte
}

// SubmitResults delivers the results of several jobs of one place — their
// claims share their nodes — with one request per node
// (wire.ProtoResultMany) instead of one per job and node, then goes on
// with each result not yet stored by a majority as SubmitResult does
// alone (retries with backoff, the job's current closest). It returns,
// per item, how many replicas stored it and nil, or the error
// SubmitResult would have returned. A node that refuses one result
// refuses only it. A result short of a majority after the delivery —
// nodes that do not serve the protocol, answered with the wrong count of
// verdicts, refused it or were silent — goes alone to the nodes that did
// not store it; one stored by a majority reaches the rest by their sync.
func (c *Claimer) SubmitResults(ctx context.Context, items []ResultItem) ([]int, []error) {
	counts := make([]int, len(items))
	errs := make([]error, len(items))
	if len(items) == 0 {
		return counts, errs
	}
	certs := make([]*wire.CertifyRequest, len(items))
	for i, it := range items {
		if it.Claim.cert != nil {
			certs[i] = it.Claim.cert.take()
		}
		if certs[i] == nil {
			if err := it.Claim.Certified(ctx); err != nil {
				errs[i] = fmt.Errorf("submit result: %w", err)
			}
		}
	}
	stored := c.submitMany(ctx, items, certs, errs)
	need := majority(c.d.Replication())
	var wg sync.WaitGroup
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		if len(stored[i]) >= need {
			c.drop(it.Claim.Job)
			counts[i] = len(stored[i])
			if certs[i] != nil {
				c.certifyUnstored(ctx, it.Claim, certs[i], stored[i])
			}
			continue
		}
		// Short of a majority: alone, from where the delivery left it.
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := c.submitResult(ctx, it.Claim, it.Envelope, certs[i], stored[i])
			if certs[i] != nil {
				c.certifyUnstored(ctx, it.Claim, certs[i], n)
			}
			counts[i], errs[i] = len(n), err
		}()
	}
	wg.Wait()
	return counts, errs
}

// submitMany sends each node of the items' claims one many-result request
// with the items its claims name (those not failed in errs), carrying an
// item's certificate to the nodes that did not accept its claim, and
// returns, per item, the nodes that stored it.
func (c *Claimer) submitMany(ctx context.Context, items []ResultItem, certs []*wire.CertifyRequest, errs []error) []map[string]bool {
	stored := make([]map[string]bool, len(items))
	for i := range stored {
		stored[i] = map[string]bool{}
	}
	var nodes []string
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		for _, n := range claimNodes(it.Claim) {
			if !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
	}
	at := c.now().UnixMilli()
	type sent struct {
		req   wire.ResultManyRequest
		index []int // item of each request entry
		resp  wire.ResultManyResponse
	}
	per := make(map[string]*sent, len(nodes))
	for _, n := range nodes {
		s := &sent{}
		size := 0
		for i, it := range items {
			if errs[i] != nil || !slices.Contains(it.Claim.Nodes, peer.ID(n)) {
				continue
			}
			if len(s.req.Items) == wire.MaxClaimMany || size+len(it.Envelope) > wire.MaxResultManyBytes {
				continue // past the request's bounds: sent alone after
			}
			size += len(it.Envelope)
			e := wire.ResultSubmit{Envelope: it.Envelope, At: at, Sent: sentTo(claimNodes(it.Claim))}
			if certs[i] != nil && !it.Claim.acceptedBy[n] {
				e.Start, e.Accepts = certs[i].Start, certs[i].Accepts
			}
			s.req.Items = append(s.req.Items, e)
			s.index = append(s.index, i)
		}
		per[n] = s
	}
	nodes = slices.DeleteFunc(nodes, func(n string) bool { return len(per[n].req.Items) == 0 })
	results := c.fanOutCall(ctx, nodes, func(ctx context.Context, n string) error {
		return c.callResultMany(ctx, peer.ID(n), &per[n].req, &per[n].resp)
	})
	for n, err := range results {
		s := per[n]
		if err != nil || len(s.resp.Refused) != len(s.index) {
			continue // each result goes alone to this node (submitResult)
		}
		for j, why := range s.resp.Refused {
			if why == "" {
				stored[s.index[j]][n] = true
			}
		}
	}
	return stored
}
