package indexnet

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
)

// closestAmong is how many of the nodes nearest a job's position (this one
// included) isClosest looks at.
const closestAmong = 8

// closestFunc returns isClosest without a prober, for many positions in a
// row: this node is the closest live node to pos when the peers of its
// routing table nearer to pos are all marked dead and fewer than
// closestAmong. The peers' positions are hashed once here, where
// NearestLocal would hash and sort them for every position.
func (w *Writer) closestFunc() func(pos keyspace.Pos) bool {
	if !w.d.IsServer() {
		return func(keyspace.Pos) bool { return false } // never among NearestLocal's
	}
	type peerPos struct {
		id  peer.ID
		pos keyspace.Pos
	}
	self := w.d.ID()
	var ps []peerPos
	for _, p := range w.d.RoutingTablePeers() {
		if p != self {
			ps = append(ps, peerPos{p, keyspace.PeerPos([]byte(p))})
		}
	}
	me := w.d.Self()
	return func(pos keyspace.Pos) bool {
		nearer := 0
		for _, q := range ps {
			if !keyspace.CloserTo(pos, q.pos, me) {
				continue
			}
			if nearer++; nearer >= closestAmong || !w.d.IsMarkedDead(q.id) {
				return false
			}
		}
		return true
	}
}
