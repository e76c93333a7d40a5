package node

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/overlay"
)

// Join dials peers in parallel, waits until the reachable ones are
// admitted, and refreshes the routing table with a lookup of the node's
// own position. It fails only when none could be reached.
func (n *Node) Join(ctx context.Context, peers []peer.AddrInfo) error {
	return n.join(ctx, peers, false)
}

// join is Join; rejoin says the node restarted with remembered peers, and
// then refreshes its neighbourhood with one near question instead of the
// lookup (refreshNeighbours).
func (n *Node) join(ctx context.Context, peers []peer.AddrInfo, rejoin bool) error {
	in := n.cur()
	reached, errs := n.dialAll(ctx, in, peers)
	if len(reached) == 0 && len(errs) > 0 {
		return fmt.Errorf("join: %w", overlay.JoinError(errs))
	}
	for _, err := range errs {
		n.log.Warn("bootstrap peer unreachable", "err", err)
	}
	n.refreshNeighbours(ctx, in, reached, rejoin)
	in.dht.Invalidate([]byte(n.ID()))
	return nil
}

// dialAll dials peers in parallel and returns the nodes admitted (put in
// the routing table at once) and the errors of those not reached.
func (n *Node) dialAll(ctx context.Context, in *instance, peers []peer.AddrInfo) (reached []peer.ID, errs []error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, ai := range peers {
		if ai.ID == n.ID() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			adm, err := n.admit(ctx, in, ai)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("join via %s: %w", ai.ID, err))
				return
			}
			if adm.Role() == certs.RoleNode {
				reached = append(reached, adm.Peer)
			}
		}()
	}
	wg.Wait()
	return reached, errs
}

// admit dials ai and waits for its admission (following a node that
// moved since ai was written); an admitted node goes into the routing
// table at once — kad-dht adds a peer only after its own asynchronous
// check, and the refresh after the dials needs someone to ask.
func (n *Node) admit(ctx context.Context, in *instance, ai peer.AddrInfo) (*overlay.Admitted, error) {
	cctx, cancel := context.WithTimeout(ctx, n.cfg.HelloTimeout)
	defer cancel()
	adm, err := in.ep.Join(cctx, ai)
	if err == nil && adm.Role() == certs.RoleNode {
		_, _ = in.dht.AddToRoutingTable(adm.Peer)
	}
	return adm, err
}

// refreshNeighbours fills the routing table around the node's own
// position. A new node looks its position up (kad-dht's lookup, some 20–30
// FIND_NODE requests). A restarted node (rejoin) already dialled the
// peers it remembered, its neighbours of before among them: it asks the
// nearest of those it reached for the nodes nearest its position — one
// near question — and dials those it does not know, which admits them
// into its routing table and tells them it is back. Under 30 s lifetimes
// the restarts' lookups were 16–20 RPCs per job (issue 24). A rejoin
// whose question fails falls back to the lookup.
func (n *Node) refreshNeighbours(ctx context.Context, in *instance, reached []peer.ID, rejoin bool) {
	ctx = dht.WithPurpose(ctx, dht.PurposeJoin)
	self := []byte(n.ID())
	if rejoin && len(reached) > 0 {
		near, err := in.dht.NearVia(ctx, self, reached, 2*in.dht.Replication())
		if err == nil {
			known := in.dht.RoutingTablePeers()
			var wg sync.WaitGroup
			for _, p := range near {
				if p == n.ID() || slices.Contains(known, p) {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _ = n.admit(ctx, in, peer.AddrInfo{ID: p})
				}()
			}
			wg.Wait()
			return
		}
		n.log.Warn("rejoin near question failed; looking our position up", "err", err)
	}
	if _, err := in.dht.ClosestN(ctx, self, in.dht.Replication()); err != nil {
		n.log.Warn("self lookup", "err", err)
	}
}
