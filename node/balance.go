package node

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/balancenet"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/loadbalance"
)

// BalanceConfig configures load balancing by moving positions (package
// balancenet). Zero values take the defaults.
type BalanceConfig = balancenet.Config

// ErrMoving reports a move while one is in progress.
var ErrMoving = balancenet.ErrMoving

// newBalance is the node's balancing service: it outlives instances, each
// of which serves it (openInstance).
func (n *Node) newBalance() (*balancenet.Service, error) {
	return balancenet.New(balancenet.Deps{
		Current: func() balancenet.Instance { return n.cur().balance() },
		Restart: n.restart,
		Rejoin: func(ctx context.Context, heavy peer.AddrInfo) error {
			return n.Join(ctx, append([]peer.AddrInfo{heavy}, n.knownPeers(n.cfg.MaxKnownPeers)...))
		},
		Account: n.id.Cert.Raw,
		// The current position record counts as the last move: peers refuse
		// a newer one within the minimum move interval of it, so a fresh
		// node must not try to move before then either.
		LastMove: n.id.Position.Position.IssuedAt,
		Env:      n.env,
	}, n.cfg.Balance)
}

// balance is what load balancing uses of the instance.
func (in *instance) balance() balancenet.Instance {
	return balancenet.Instance{Endpoint: in.ep, DHT: in.dht, Pool: in.pool, Index: in.index}
}

// restart is a move's restart: it saves key as the node's identity and
// replaces the current instance with one under it.
func (n *Node) restart(_ context.Context, key crypto.PrivKey) (balancenet.Instance, error) {
	old := n.cur()
	n.flushPeers()
	if err := n.id.Rotate(key, n.cfg.Now()); err != nil {
		return balancenet.Instance{}, fmt.Errorf("move: save the new identity: %w", err)
	}
	_ = old.close() // frees the listen port for the new host
	in, err := n.openInstance(nil)
	if err != nil {
		return balancenet.Instance{}, fmt.Errorf("move: restart under the new identity: %w", err)
	}
	n.mu.Lock()
	n.inst = in
	n.mu.Unlock()
	if n.cfg.OnMove != nil {
		n.cfg.OnMove(old.host.ID(), in.host.ID())
	}
	return in.balance(), nil
}

// Load is the node's current load, as load balancing sees it.
func (n *Node) Load() loadbalance.Load { return n.lb.Load() }

// BalanceRound probes the node its routing table holds nearest a random
// key: if this node is much lighter, it moves next to the other and takes
// about half its load.
func (n *Node) BalanceRound(ctx context.Context) (loadbalance.Decision, error) {
	return n.lb.BalanceRound(ctx)
}

// BalanceWith compares this node's load with another's: if this node is
// the much lighter one it moves next to the other; if it is the much
// heavier one it nudges the other to do so.
func (n *Node) BalanceWith(ctx context.Context, other peer.ID) (loadbalance.Decision, error) {
	return n.lb.BalanceWith(ctx, other)
}

// Move takes the node to a new position in target, next to heavy
// (balancenet.Service.Move).
func (n *Node) Move(ctx context.Context, target keyspace.Region, heavy peer.AddrInfo) error {
	return n.lb.Move(ctx, target, heavy)
}

// WaitBalance waits for the balancing this node was nudged into or
// started on a piggy-backed load.
func (n *Node) WaitBalance() { n.lb.Wait() }

// Reactions is how many balances piggy-backed loads started.
func (n *Node) Reactions() int { return n.lb.Reactions() }

// Moves is how many times the node moved.
func (n *Node) Moves() int { return n.lb.Moves() }
