package dht

import (
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
)

// PeerAt is a routing-table peer and its position in the keyspace
// (keyspace.PeerPos).
type PeerAt struct {
	ID  peer.ID
	Pos keyspace.Pos
}

// tableCache keeps the routing table's peers with their positions,
// hashed once, until the table changes: kad-dht's add and remove
// callbacks bump gen (hookPeerAdded, hookPeerRemoved).
type tableCache struct {
	gen   atomic.Uint64
	mu    sync.Mutex
	built uint64 // gen the peers were listed at, plus one; 0: none yet
	peers []PeerAt
}

// changed records that the routing table changed.
func (c *tableCache) changed() { c.gen.Add(1) }

// TablePositions lists the routing-table peers with their positions, from
// a snapshot rebuilt only after the table changed. The slice is shared:
// callers must not modify it.
func (d *DHT) TablePositions() []PeerAt {
	c := &d.table
	c.mu.Lock()
	defer c.mu.Unlock()
	gen := c.gen.Load()
	if c.built == gen+1 {
		return c.peers
	}
	ids := d.RoutingTablePeers()
	peers := make([]PeerAt, len(ids))
	for i, p := range ids {
		peers[i] = PeerAt{ID: p, Pos: keyspace.PeerPos([]byte(p))}
	}
	c.peers, c.built = peers, gen+1
	return peers
}

// TableGen is the routing table's generation: it changes whenever a peer
// is added to the table or removed from it.
func (d *DHT) TableGen() uint64 { return d.table.gen.Load() }
