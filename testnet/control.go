package testnet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
)

// bootstrap fills every node's routing table directly (admitting the
// peers it keeps with the same verification the handshake runs), or, with
// SlowBootstrap, joins every node through node 0.
func (n *Network) bootstrap(ctx context.Context) error {
	live := n.Live()
	if n.opts.SlowBootstrap {
		first := live[0].AddrInfo()
		for _, nd := range live[1:] {
			if err := nd.Join(ctx, []peer.AddrInfo{first}); err != nil {
				return err
			}
		}
		return nil
	}
	return n.fill(live, live)
}

// fill puts each of targets' peers (those of all that fit its buckets)
// into its routing table and admits them.
func (n *Network) fill(targets, all []*node.Node) error {
	hellos := make(map[peer.ID]*wireHello, len(all))
	for _, nd := range all {
		hellos[nd.ID()] = helloOf(nd)
	}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for ti, nd := range targets {
		order := n.perm(len(all))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for _, k := range order {
				other := all[k]
				if other.ID() == nd.ID() {
					continue
				}
				nd.Endpoint().Raw().Peerstore().AddAddrs(other.ID(), other.AddrInfo().Addrs, peerstore.PermanentAddrTTL)
				added, err := nd.DHT().AddToRoutingTable(other.ID())
				if err != nil || !added {
					continue
				}
				if err := nd.Endpoint().Preadmit(other.ID(), hellos[other.ID()]); err != nil {
					nd.DHT().Kad().RoutingTable().RemovePeer(other.ID())
					errs[ti] = fmt.Errorf("node %s admitting %s: %w", nd.Name(), other.Name(), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (n *Network) perm(k int) []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rng.Perm(k)
}

// Live returns the running nodes, in index order.
func (n *Network) Live() []*node.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*node.Node
	for _, nd := range n.nodes {
		if nd != nil {
			out = append(out, nd)
		}
	}
	return out
}

// Node returns node i, or nil when it is not running.
func (n *Network) Node(i int) *node.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nodes[i]
}

// Len is the number of node slots, running or not.
func (n *Network) Len() int { return len(n.nodes) }

// Dir is node i's data directory.
func (n *Network) Dir(i int) string { return n.dirs[i] }

// Kill stops node i (its data directory stays).
func (n *Network) Kill(i int) error {
	n.mu.Lock()
	nd := n.nodes[i]
	n.nodes[i] = nil
	n.mu.Unlock()
	if nd == nil {
		return fmt.Errorf("node %d is not running", i)
	}
	if n.mn != nil {
		// A closed mocknet host can still be reached over its links: cut
		// them, as a dead machine would be cut off.
		n.isolate(nd.ID())
		n.mu.Lock()
		if n.killed == nil {
			n.killed = map[peer.ID]bool{}
		}
		n.killed[nd.ID()] = true
		n.mu.Unlock()
	}
	return nd.Close()
}

// Restart starts node i again from its data directory; it rejoins through
// the peers it remembers. On mocknet it is linked to every peer not killed
// (agents included), so restarting a node during a Partition links it
// across the cut.
func (n *Network) Restart(ctx context.Context, i int) error {
	if n.Node(i) != nil {
		return fmt.Errorf("node %d is running", i)
	}
	return n.open(i)
}

// isolate cuts every mocknet link and connection of peer id.
func (n *Network) isolate(id peer.ID) {
	for _, other := range n.mn.Peers() {
		if other == id {
			continue
		}
		_ = n.mn.UnlinkPeers(id, other)
		_ = n.mn.DisconnectPeers(id, other)
	}
}

// Partition cuts every mocknet link between nodes of different groups
// (groups list node indices; nodes in no group keep all their links).
func (n *Network) Partition(groups ...[]int) error {
	if n.mn == nil {
		return errors.New("partition needs the mocknet transport")
	}
	group := map[int]int{}
	for g, idx := range groups {
		for _, i := range idx {
			group[i] = g + 1
		}
	}
	for i := range n.nodes {
		for j := i + 1; j < len(n.nodes); j++ {
			a, b := n.Node(i), n.Node(j)
			if a == nil || b == nil || group[i] == 0 || group[j] == 0 || group[i] == group[j] {
				continue
			}
			_ = n.mn.UnlinkPeers(a.ID(), b.ID())
			_ = n.mn.DisconnectPeers(a.ID(), b.ID())
		}
	}
	return nil
}

// Heal links every pair of running nodes again.
func (n *Network) Heal() error {
	if n.mn == nil {
		return errors.New("heal needs the mocknet transport")
	}
	live := n.Live()
	for i, a := range live {
		for _, b := range live[i+1:] {
			if len(n.mn.LinksBetweenPeers(a.ID(), b.ID())) == 0 {
				if _, err := n.mn.LinkPeers(a.ID(), b.ID()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Positions maps each running node to its position.
func (n *Network) Positions() map[peer.ID]keyspace.Pos {
	out := map[peer.ID]keyspace.Pos{}
	for _, nd := range n.Live() {
		out[nd.ID()] = keyspace.PeerPos([]byte(nd.ID()))
	}
	return out
}

// PlaceOf is the place key of job key (job.PlaceKey: its replicas are
// the nodes closest to it) as the first live node holding the job has
// it; a job no live node holds is taken to be placed by its key.
func (n *Network) PlaceOf(key []byte) []byte {
	for _, nd := range n.Live() {
		if place, ok := nd.Pool().PlaceKey(key); ok {
			return place
		}
	}
	return key
}

// JobClosest is TrueClosest of job key's place: the job's true r
// closest nodes.
func (n *Network) JobClosest(key []byte, r int) []peer.ID { return n.TrueClosest(n.PlaceOf(key), r) }

// TrueClosest computes the r running nodes closest to key from all
// positions: the ground truth lookups are judged against.
func (n *Network) TrueClosest(key []byte, r int) []peer.ID {
	var ids []peer.ID
	for _, nd := range n.Live() {
		ids = append(ids, nd.ID())
	}
	target := keyspace.KeyPos(key)
	sortPeers(target, ids)
	if len(ids) > r {
		ids = ids[:r]
	}
	return ids
}

// Close stops every node and the mocknet.
func (n *Network) Close() error {
	var errs []error
	for i := range n.nodes {
		if n.Node(i) != nil {
			errs = append(errs, n.Kill(i))
		}
	}
	if n.mn != nil {
		errs = append(errs, n.mn.Close())
	}
	return errors.Join(errs...)
}

// NewHost starts a libp2p host for a party that is not a node (a client, a
// project, or a test's impostor) on the network's transport: on mocknet it
// is linked to every running node; on TCP it listens on 127.0.0.1.
func (n *Network) NewHost(key crypto.PrivKey) (host.Host, error) {
	if n.mn == nil {
		return overlay.NewHost(overlay.HostConfig{
			Key:    key,
			Listen: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/0")},
		})
	}
	n.mu.Lock()
	n.extra++
	addr := multiaddr.StringCast(fmt.Sprintf("/ip4/10.255.%d.%d/tcp/4001", n.extra>>8&255, n.extra&255))
	n.mu.Unlock()
	h, err := n.mn.AddPeer(key, addr)
	if err != nil {
		return nil, err
	}
	for _, nd := range n.Live() {
		if _, err := n.mn.LinkPeers(h.ID(), nd.ID()); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// moverHost builds the mocknet host of a node that moved to a new
// identity, linked to every party not cut off.
func (n *Network) moverHost(key crypto.PrivKey) (host.Host, error) {
	n.mu.Lock()
	n.extra++
	addr := multiaddr.StringCast(fmt.Sprintf("/ip4/10.254.%d.%d/tcp/4001", n.extra>>8&255, n.extra&255))
	killed := maps.Clone(n.killed)
	n.mu.Unlock()
	h, err := n.mn.AddPeer(key, addr)
	if err != nil {
		return nil, err
	}
	for _, p := range n.mn.Peers() {
		if p != h.ID() && !killed[p] {
			if _, err := n.mn.LinkPeers(h.ID(), p); err != nil {
				h.Close()
				return nil, err
			}
		}
	}
	return h, nil
}
