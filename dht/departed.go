package dht

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
)

// departedMax bounds the nodes remembered after they left the routing
// table (departed); the oldest are forgotten first.
const departedMax = 2048

// departed remembers the nodes that left this party's routing table (a
// failed query or refresh ping, a revocation) and when, for DepartedKeep:
// a node that judges a claim's certificate counts its acceptors that have
// left since as near (claimnet's certificate rule), and the table alone
// forgot them.
type departed struct {
	mu    sync.Mutex
	at    map[peer.ID]time.Time
	order []peer.ID // insertion order, for eviction; may hold stale IDs
}

// hookPeerRemoved chains the departed record after kad-dht's own
// routing-table removal callback; a peer that comes back is forgotten by
// peerAdded's hook.
func (d *DHT) hookPeerRemoved() {
	rt := d.kad.RoutingTable()
	prev := rt.PeerRemoved
	rt.PeerRemoved = func(p peer.ID) {
		if prev != nil {
			prev(p)
		}
		d.table.changed()
		d.left.add(p, d.env.Now())
		d.peerDown(p)
	}
	d.OnPeerAdded(d.left.remove)
}

// OnPeerDown registers f to be called whenever a node may have left: its
// last connection closed, it failed to answer (MarkDead), or it left the
// routing table (kad-dht evicts a peer whose query or refresh ping
// failed, not one that merely disconnected). A peer that only lost a
// trimmed connection is reported too: probe before acting. f may run with
// the routing table locked: it must return at once and must not call into
// the DHT; record the peer and do the work elsewhere.
func (d *DHT) OnPeerDown(f func(peer.ID)) { d.down.add(f) }

// peerDown tells the registered hooks that p may have left.
func (d *DHT) peerDown(p peer.ID) { d.down.call(p) }

func (l *departed) add(p peer.ID, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at == nil {
		l.at = map[peer.ID]time.Time{}
	}
	if _, ok := l.at[p]; !ok {
		l.order = append(l.order, p)
	}
	l.at[p] = now
	for len(l.at) > departedMax && len(l.order) > 0 {
		delete(l.at, l.order[0])
		l.order = l.order[1:]
	}
	if len(l.order) > 2*departedMax { // stale IDs of peers that came back
		keep := l.order[:0]
		for _, q := range l.order {
			if _, ok := l.at[q]; ok {
				keep = append(keep, q)
			}
		}
		l.order = keep
	}
}

func (l *departed) remove(p peer.ID) {
	l.mu.Lock()
	delete(l.at, p)
	l.mu.Unlock()
}

// since returns the peers that left at or after t.
func (l *departed) since(t time.Time) []peer.ID {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []peer.ID
	for p, at := range l.at {
		if !at.Before(t) {
			out = append(out, p)
		}
	}
	return out
}

// NearestSeen returns the n peers nearest to the raw position pos among
// the routing table (this party included when it is a node) and the nodes
// that left it within DepartedKeep: the nodes that are, or lately were,
// among pos's nearest in this party's view. Nearest first. Only nodes
// that were admitted into the routing table appear, so a peer ID ground
// near pos counts only if it joined.
func (d *DHT) NearestSeen(pos keyspace.Pos, n int) []peer.ID {
	ps := d.NearestLocal(pos, n)
	gone := d.left.since(d.env.Now().Add(-d.cfg.DepartedKeep))
	if len(gone) == 0 {
		return ps
	}
	ps = append(ps, gone...)
	SortPeers(pos, ps)
	return ps[:min(n, len(ps))]
}
