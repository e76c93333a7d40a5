package testnet

import (
	"context"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peerstore"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/indexwriter"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/project"
)

// NewAgent creates a certified party of the role (client or project) with
// its own host, admits it to every running node's view and fills its
// routing table with them, the way NewParty and fill do for nodes.
func (n *Network) NewAgent(ctx context.Context, role certs.Role, name string) (*agent.Agent, error) {
	id, err := n.NewParty(role, name)
	if err != nil {
		return nil, err
	}
	return n.OpenAgent(ctx, id)
}

// OpenAgent starts an agent of an existing party (a process of it
// starting again: same identity, a new host), its peerstore holding the
// running nodes' addresses.
func (n *Network) OpenAgent(ctx context.Context, id *keystore.Identity) (*agent.Agent, error) {
	name := id.Name
	h, err := n.NewHost(id.PeerKey)
	if err != nil {
		return nil, err
	}
	a, err := agent.Open(agent.Config{
		Identity: id, Host: h, DHT: n.opts.DHT, Index: n.opts.Index.Config, HelloTimeout: n.opts.HelloTimeout,
		Now: n.opts.Now, Logger: n.opts.Logger,
	})
	if err != nil {
		h.Close()
		return nil, err
	}
	for _, nd := range n.Live() {
		h.Peerstore().AddAddrs(nd.ID(), nd.AddrInfo().Addrs, peerstore.PermanentAddrTTL)
		if err := a.Endpoint().Preadmit(nd.ID(), nd.Endpoint().Hello()); err != nil {
			a.Close()
			return nil, fmt.Errorf("agent %s admitting %s: %w", name, nd.Name(), err)
		}
	}
	return a, nil
}

// NewProject creates a certified project on the network.
func (n *Network) NewProject(ctx context.Context, name string) (*project.Project, error) {
	a, err := n.NewAgent(ctx, certs.RoleProject, name)
	if err != nil {
		return nil, err
	}
	return n.openProject(a)
}

// ReopenProject starts project id's process again (after its agent was
// closed: the project went offline), with the same identity.
func (n *Network) ReopenProject(ctx context.Context, id *keystore.Identity) (*project.Project, error) {
	a, err := n.OpenAgent(ctx, id)
	if err != nil {
		return nil, err
	}
	return n.openProject(a)
}

func (n *Network) openProject(a *agent.Agent) (*project.Project, error) {
	p, err := project.New(a)
	if err != nil {
		a.Close()
		return nil, err
	}
	n.mu.Lock()
	seed := n.rng.Uint64()
	n.mu.Unlock()
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	p.SetRand(newSeeded(s))
	return p, nil
}

// Refill fills every running node's routing table again from the running
// nodes (what kad-dht's refresh does over time), e.g. after a partition
// heals.
func (n *Network) Refill() error {
	live := n.Live()
	return n.fill(live, live)
}

// RepublishAll runs one republish round on every running node, in a
// seeded random order (what one republish period does), and sums the
// rounds' figures.
func (n *Network) RepublishAll(ctx context.Context) pool.RoundStats {
	live := n.Live()
	var sum pool.RoundStats
	var mu sync.Mutex
	for _, i := range n.perm(len(live)) {
		st := live[i].Pool().RepublishRound(ctx)
		mu.Lock()
		sum.Held += st.Held
		sum.Closest += st.Closest
		sum.Synced += st.Synced
		sum.Repaired += st.Repaired
		sum.Merged += st.Merged
		sum.Dropped += st.Dropped
		sum.Failed += st.Failed
		sum.RPCs += st.RPCs
		sum.BytesSent += st.BytesSent
		sum.BytesReceived += st.BytesReceived
		sum.Elapsed += st.Elapsed
		mu.Unlock()
	}
	for range 2 {
		for _, nd := range n.Live() {
			nd.Pool().Quiesce()
		}
	}
	return sum
}

// Holders lists the running nodes that hold the job key.
func (n *Network) Holders(key []byte) []int {
	var out []int
	for i := range n.nodes {
		if nd := n.Node(i); nd != nil {
			if _, ok := nd.Pool().State(key); ok {
				out = append(out, i)
			}
		}
	}
	return out
}

// Index returns the slot of a running node by peer ID, or -1.
func (n *Network) Index(id fmt.Stringer) int {
	for i := range n.nodes {
		if nd := n.Node(i); nd != nil && nd.ID().String() == id.String() {
			return i
		}
	}
	return -1
}

// WriteAll runs one index-writer round on every running node (writes what
// is missing, rewrites what is due, withdraws what is no longer listed).
func (n *Network) WriteAll(ctx context.Context) indexwriter.WriteStats {
	var sum indexwriter.WriteStats
	for _, nd := range n.Live() {
		st := nd.Writer().Round(ctx)
		sum.Written += st.Written
		sum.Rewritten += st.Rewritten
		sum.Withdrawn += st.Withdrawn
		sum.Failed += st.Failed
	}
	return sum
}

// FlushAll makes every running node's index writer act on the job changes
// it has seen (what the background writer does within a moment).
func (n *Network) FlushAll(ctx context.Context) indexwriter.WriteStats {
	var sum indexwriter.WriteStats
	for _, nd := range n.Live() {
		st := nd.Writer().Flush(ctx)
		sum.Written += st.Written
		sum.Rewritten += st.Rewritten
		sum.Withdrawn += st.Withdrawn
		sum.Failed += st.Failed
	}
	return sum
}

// BalanceAll runs one load-balancing period: every running node, in a
// seeded random order, probes the node closest to a random key (and
// nudged nodes probe back); it returns how many moves happened.
func (n *Network) BalanceAll(ctx context.Context) int {
	before := 0
	for _, nd := range n.Live() {
		before += nd.Moves()
	}
	live := n.Live()
	for _, i := range n.perm(len(live)) {
		_, _ = live[i].BalanceRound(ctx)
		for _, nd := range n.Live() {
			nd.WaitBalance()
		}
	}
	after := 0
	for _, nd := range n.Live() {
		after += nd.Moves()
	}
	return after - before
}
