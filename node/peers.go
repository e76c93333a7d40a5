package node

import (
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/store"
	"github.com/up-pool/up/wire"
)

const peersNS = "peer"

// peerBook remembers admitted nodes' addresses in the store, so a
// restarted node can rejoin without bootstrap flags. Changes are written in
// batches every Config.PeerSaveInterval and at close.
type peerBook struct {
	mu      sync.Mutex
	pending map[peer.ID][]byte // nil value: delete
}

func (n *Node) rememberPeers(in *instance) {
	n.peers.mu.Lock()
	if n.peers.pending == nil {
		n.peers.pending = make(map[peer.ID][]byte)
	}
	n.peers.mu.Unlock()
	in.ep.OnAdmit(func(a *overlay.Admitted) {
		if a.Role() != certs.RoleNode {
			return
		}
		n.peers.mu.Lock()
		n.peers.pending[a.Peer] = []byte{} // addresses read at flush time
		n.peers.mu.Unlock()
	})
	in.ep.Admission().OnDrop(func(p peer.ID, _ error) {
		n.peers.mu.Lock()
		n.peers.pending[p] = nil
		n.peers.mu.Unlock()
	})
}

// savePeersLoop flushes the peer book periodically.
func (n *Node) savePeersLoop() {
	t := time.NewTicker(n.cfg.PeerSaveInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			n.flushPeers()
		}
	}
}

// flushPeers writes the pending peer-book changes in one batch.
func (n *Node) flushPeers() {
	n.peers.mu.Lock()
	pending := n.peers.pending
	n.peers.pending = make(map[peer.ID][]byte)
	n.peers.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	b := n.store.NewBatch()
	for p, v := range pending {
		key := store.Key(peersNS, []byte(p))
		if v == nil {
			b.Delete(key)
			continue
		}
		rec := wire.PeerRecord{ID: []byte(p)}
		for _, ad := range n.cur().host.Peerstore().Addrs(p) {
			if len(rec.Addrs) == wire.MaxAddrs {
				break
			}
			rec.Addrs = append(rec.Addrs, ad.Bytes())
		}
		if len(rec.Addrs) == 0 {
			continue
		}
		enc, err := wire.Marshal(&rec)
		if err != nil {
			continue
		}
		b.Put(key, enc)
	}
	if err := b.Commit(true); err != nil {
		n.log.Warn("save known peers", "err", err)
	}
}

// knownPeers returns up to max remembered peers with their addresses.
func (n *Node) knownPeers(max int) []peer.AddrInfo {
	var out []peer.AddrInfo
	_ = n.store.Scan(store.Key(peersNS), func(_, v []byte) bool {
		ai, err := decodePeerEntry(v)
		if err != nil || ai.ID == n.ID() {
			return true
		}
		if len(ai.Addrs) > 0 {
			out = append(out, ai)
		}
		return len(out) < max
	})
	return out
}

// decodePeerEntry reads one peer-book entry of the store.
func decodePeerEntry(v []byte) (peer.AddrInfo, error) {
	var rec wire.PeerRecord
	if err := wire.Decode(v, &rec); err != nil {
		return peer.AddrInfo{}, fmt.Errorf("peer-book entry: %w", err)
	}
	return dht.ParsePeerRecord(rec)
}

// KnownPeers returns the remembered peers (at most MaxKnownPeers).
func (n *Node) KnownPeers() []peer.AddrInfo { return n.knownPeers(n.cfg.MaxKnownPeers) }
