package testnet

import (
	"context"
	"encoding/binary"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// madeUpBits is how many leading bits a lie-near node's made-up peers
// share with the position asked about: nearer than any real node of a
// network of fewer than 2^madeUpBits nodes (4,096 hashes to grind each).
const madeUpBits = 12

// lieNear makes nd answer /up/near with lies, leaving kad-dht's protocol
// honest: itself first, then the other Byzantine nodes, then made-up peer
// IDs (hashes of nothing, ground near the position asked about) with nd's
// own addresses, up to the count asked. A made-up peer cannot be dialled:
// its handshake fails at once (nd answers with another peer ID).
func (n *Network) lieNear(nd *node.Node) {
	self := nd.ID()
	var seq atomic.Uint64
	nd.Endpoint().Handle(wire.ProtoNear, wire.MaxNearFrame, nil, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.NearRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, overlay.StatusErr(wire.StatusBadRequest, err)
		}
		var target keyspace.Pos
		copy(target[:], req.Target)
		count := min(max(int(req.Count), 1), wire.MaxNearCount)
		addrs := recordAddrs(nd.Endpoint().Raw().Addrs())
		peers := []wire.PeerRecord{{ID: []byte(self), Addrs: addrs}}
		for j := range n.Byzantine() {
			if other := n.Node(j); other != nil && other.ID() != self && len(peers) < count {
				peers = append(peers, wire.PeerRecord{ID: []byte(other.ID()), Addrs: recordAddrs(other.Addrs())})
			}
		}
		made := 0
		for len(peers) < count {
			peers = append(peers, wire.PeerRecord{ID: []byte(madeUpPeer(target, self, seq.Add(1))), Addrs: addrs})
			made++
		}
		n.adv.add(BehaviourLieNear+"/answered", 1)
		n.adv.add(BehaviourLieNear+"/made-up", made)
		return &wire.NearResponse{Peers: peers}, nil
	})
}

// recordAddrs encodes up to wire.MaxAddrs addresses for a peer record.
func recordAddrs(as []multiaddr.Multiaddr) [][]byte {
	var out [][]byte
	for _, a := range as[:min(len(as), wire.MaxAddrs)] {
		out = append(out, a.Bytes())
	}
	return out
}

// madeUpPeer grinds a peer ID (a SHA-256 multihash of nothing anyone
// holds the key of) whose position shares madeUpBits leading bits with
// target, or the best of 1<<(madeUpBits+2) tries.
func madeUpPeer(target keyspace.Pos, salt peer.ID, seq uint64) peer.ID {
	var best peer.ID
	bestLen := -1
	buf := append([]byte(salt), make([]byte, 16)...)
	tail := buf[len(salt):]
	binary.BigEndian.PutUint64(tail, seq)
	for try := uint64(0); try < 1<<(madeUpBits+2); try++ {
		binary.BigEndian.PutUint64(tail[8:], try)
		mh, err := multihash.Sum(buf, multihash.SHA2_256, -1)
		if err != nil {
			continue
		}
		id := peer.ID(mh)
		if l := keyspace.CommonPrefixLen(keyspace.PeerPos([]byte(id)), target); l > bestLen {
			best, bestLen = id, l
			if l >= madeUpBits {
				break
			}
		}
	}
	return best
}
