package blobclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/wire"
)

// withdrawLifetime is a withdrawal statement's lifetime: it ends as it
// is made. Nodes delete the blob once it is past, on their clock, by the
// skew margin (job.Expired), as any expired statement.
const withdrawLifetime = time.Millisecond

// Withdraw ends project a's blob m (no job needs it any more): a
// statement created now, or just after uploaded (the creation time, Unix
// ms, of the statement the blob was uploaded with) should this clock be
// behind it, whose life ends now supersedes the upload's (nodes keep the
// later of two statements), offered to the blob's nodes — hint, or its r
// closest looked up. Each deletes the
// blob at its next expiry sweep past the skew margin, and refuses the
// older statement afterwards, so a node that missed the withdrawal cannot
// place the blob back. It returns the nodes that took the withdrawal.
func Withdraw(ctx context.Context, a *agent.Agent, m *blob.Manifest, uploaded int64, hint ...peer.ID) ([]peer.ID, error) {
	key := m.Key()
	nodes := hint
	if len(nodes) == 0 {
		var err error
		nodes, err = a.DHT().ClosestPeers(dht.DefaultPurpose(ctx, dht.PurposeOther), key)
		if err != nil || len(nodes) == 0 {
			return nil, fmt.Errorf("withdraw blob %s: find its nodes: %w", m.CID(), orNoPeers(err))
		}
	}
	st, err := statementAt(a, m, max(a.Now().UnixMilli(), uploaded+1), withdrawLifetime)
	if err != nil {
		return nil, fmt.Errorf("withdraw blob %s: %w", m.CID(), err)
	}
	offer := &wire.BlobOffer{Statement: st.Encode(), Manifest: m.Encode()}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, p := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = Offer(ctx, a.Endpoint(), p, offer, DefaultRequestTimeout)
		}()
	}
	wg.Wait()
	var took []peer.ID
	for i, p := range nodes {
		if errs[i] != nil {
			errs[i] = fmt.Errorf("%s: %w", p, errs[i])
			continue
		}
		took = append(took, p)
	}
	if len(took) == 0 {
		return nil, fmt.Errorf("withdraw blob %s: no node took it: %w", m.CID(), errors.Join(errs...))
	}
	return took, nil
}
