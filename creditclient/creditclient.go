// Package creditclient is the caller's side of the credit protocols
// (wire.ProtoCreditPut, wire.ProtoCreditGet): a project publishing its
// receipts, a node repairing them, a client republishing its own, and
// anyone gathering a client's receipts and summing its credit. It links
// no store: the node's side is creditnet.
package creditclient

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// DefaultTimeout bounds one put or get.
const DefaultTimeout = 10 * time.Second

// Put sends encoded signed receipts to node p, wire.MaxCreditPerPut per
// request, and sums what it answered.
func Put(ctx context.Context, ep *overlay.Endpoint, p peer.ID, receipts [][]byte) (stored, had int, err error) {
	for start := 0; start < len(receipts); start += wire.MaxCreditPerPut {
		part := receipts[start:min(start+wire.MaxCreditPerPut, len(receipts))]
		cctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
		var resp wire.CreditPutResponse
		err := ep.Call(cctx, p, wire.ProtoCreditPut, &wire.CreditPut{Receipts: part}, 64, &resp)
		cancel()
		if err != nil {
			return stored, had, fmt.Errorf("put %d credit receipts to %s: %w", len(part), p, err)
		}
		stored += int(resp.Stored)
		had += int(resp.Had)
	}
	return stored, had, nil
}

// Published is what Publish did for one client.
type Published struct {
	Nodes  int     // the client's closest nodes found
	Took   int     // those that took every receipt (stored or held them)
	Errors []error // the puts that failed, by node
}

// Majority is how many of r nodes must take a client's receipts for them
// to count as published: ⌊r/2⌋+1, as for a result (r is the nodes the
// lookup found, when the network has fewer than the replication factor).
func Majority(r int) int { return r/2 + 1 }

// Publish puts the encoded receipts of one client on the r nodes closest
// to its credit key, all at once. It fails unless a majority took them.
func Publish(ctx context.Context, ep *overlay.Endpoint, d *dht.DHT, client ed25519.PublicKey, receipts [][]byte) (Published, error) {
	var out Published
	key := credit.Key(client)
	ps, err := d.ClosestPeers(ctx, key)
	if err != nil {
		return out, fmt.Errorf("publish credit of client %x: find its nodes: %w", client[:6], err)
	}
	out.Nodes = len(ps)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := Put(ctx, ep, p, receipts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out.Errors = append(out.Errors, err)
				return
			}
			out.Took++
		}()
	}
	wg.Wait()
	if len(out.Errors) > 0 {
		d.Invalidate(key)
	}
	if need := Majority(min(d.Replication(), max(len(ps), 1))); out.Took < need {
		return out, fmt.Errorf("publish credit of client %x: %d of %d nodes took its receipts, want %d: %w",
			client[:6], out.Took, len(ps), need, errors.Join(out.Errors...))
	}
	return out, nil
}

// Get asks node p for the receipts it holds for client.
func Get(ctx context.Context, ep *overlay.Endpoint, p peer.ID, client ed25519.PublicKey) ([][]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	var resp wire.CreditGetResponse
	if err := ep.Call(cctx, p, wire.ProtoCreditGet, &wire.CreditGet{Client: client}, wire.MaxCreditGetReply, &resp); err != nil {
		return nil, fmt.Errorf("get credit receipts from %s: %w", p, err)
	}
	return resp.Receipts, nil
}

// Gathered is what a client's closest nodes answered.
type Gathered struct {
	Sources []credit.Source // one per node that answered, From its peer ID
	Asked   int
	Errors  []error // the nodes that did not answer
}

// Gather asks each of the r nodes closest to client's credit key for its
// receipts, all at once.
func Gather(ctx context.Context, ep *overlay.Endpoint, d *dht.DHT, client ed25519.PublicKey) (Gathered, error) {
	var out Gathered
	ps, err := d.ClosestPeers(ctx, credit.Key(client))
	if err != nil {
		return out, fmt.Errorf("gather credit of client %x: find its nodes: %w", client[:6], err)
	}
	out.Asked = len(ps)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs, err := Get(ctx, ep, p, client)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out.Errors = append(out.Errors, err)
				return
			}
			out.Sources = append(out.Sources, credit.Source{From: p.String(), Receipts: rs})
		}()
	}
	wg.Wait()
	if len(out.Sources) == 0 {
		return out, fmt.Errorf("gather credit of client %x: none of its %d nodes answered: %w", client[:6], len(ps), errors.Join(out.Errors...))
	}
	return out, nil
}

// Show gathers client's receipts and sums its credit, verified on this
// party's clock against its CA and revocation list.
func Show(ctx context.Context, ep *overlay.Endpoint, d *dht.DHT, client ed25519.PublicKey, now time.Time) (credit.Credit, Gathered, error) {
	g, err := Gather(ctx, ep, d, client)
	if err != nil {
		return credit.Credit{}, g, err
	}
	return credit.Sum(client, g.Sources, ep.Admission().Verifier(), now), g, nil
}
