package dht

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
)

// peerHooks are the functions told of nodes entering the routing table
// (OnPeerAdded) or that may have left (OnPeerDown).
type peerHooks struct {
	mu sync.Mutex
	fs []func(peer.ID)
}

// add registers f.
func (h *peerHooks) add(f func(peer.ID)) {
	h.mu.Lock()
	h.fs = append(h.fs, f)
	h.mu.Unlock()
}

// call tells every registered function of p.
func (h *peerHooks) call(p peer.ID) {
	h.mu.Lock()
	fs := h.fs
	h.mu.Unlock()
	for _, f := range fs {
		f(p)
	}
}

// OnPeerAdded registers f to be called whenever a node enters this
// party's routing table (only admitted nodes do, see New), or one still in
// it that was marked dead is admitted again (it came back). f runs with
// the routing table locked, on the goroutine adding the peer: it must
// return at once and must not call into the DHT; record the peer and do
// the work elsewhere.
func (d *DHT) OnPeerAdded(f func(peer.ID)) { d.added.add(f) }

// peerAdded tells the registered hooks that p entered the routing table.
func (d *DHT) peerAdded(p peer.ID) { d.added.call(p) }

// hookPeerAdded chains peerAdded after kad-dht's own routing-table
// callback (which tags the peer for the connection manager). It runs
// right after kad-dht starts, before this party has dialled anyone.
func (d *DHT) hookPeerAdded() {
	rt := d.kad.RoutingTable()
	prev := rt.PeerAdded
	rt.PeerAdded = func(p peer.ID) {
		if prev != nil {
			prev(p)
		}
		d.table.changed()
		d.peerAdded(p)
	}
}

// wasMarkedDead reports whether p has a dead mark, whether or not its
// backoff passed.
func (d *DHT) wasMarkedDead(p peer.ID) bool {
	d.live.mu.Lock()
	defer d.live.mu.Unlock()
	_, ok := d.live.dead[p]
	return ok
}
