package dht

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// handleNear answers /up/near/1.0.0: this node's nearest known peers
// (itself included) to a raw position, from its routing table.
func (d *DHT) handleNear(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
	var req wire.NearRequest
	if err := wire.Decode(body, &req); err != nil {
		return nil, overlay.StatusErr(wire.StatusBadRequest, err)
	}
	var target keyspace.Pos
	copy(target[:], req.Target)
	ps := d.NearestLocal(target, int(req.Count))
	if req.Live {
		// Peers this node saw fail are left out: the asker wants who is
		// there, and would only time out on them.
		ps = d.NearestUnmarked(target, int(req.Count))
	}
	resp := &wire.NearResponse{Peers: make([]wire.PeerRecord, 0, len(ps))}
	pstore := d.ep.Raw().Peerstore()
	for _, p := range ps {
		rec := wire.PeerRecord{ID: []byte(p)}
		var addrs []multiaddr.Multiaddr
		if p == d.ep.ID() {
			addrs = d.ep.Raw().Addrs()
		} else {
			addrs = pstore.Addrs(p)
		}
		for _, a := range addrs {
			if len(rec.Addrs) == wire.MaxAddrs {
				break
			}
			rec.Addrs = append(rec.Addrs, a.Bytes())
		}
		resp.Peers = append(resp.Peers, rec)
	}
	return resp, nil
}

// Near asks node p for its n nearest known peers to the raw position pos
// (one RPC), records their addresses, and returns them nearest first.
func (d *DHT) Near(ctx context.Context, p peer.ID, pos keyspace.Pos, n int) ([]peer.ID, error) {
	if n < 1 || n > wire.MaxNearCount {
		return nil, fmt.Errorf("near count %d out of 1..%d", n, wire.MaxNearCount)
	}
	return d.near(ctx, p, &wire.NearRequest{Target: pos[:], Count: uint16(n)}, peerstore.TempAddrTTL)
}

// near asks p req, keeping the addresses learnt for ttl.
func (d *DHT) near(ctx context.Context, p peer.ID, req *wire.NearRequest, ttl time.Duration) ([]peer.ID, error) {
	if req.Count < 1 || req.Count > wire.MaxNearCount {
		return nil, fmt.Errorf("near count %d out of 1..%d", req.Count, wire.MaxNearCount)
	}
	var pos keyspace.Pos
	copy(pos[:], req.Target)
	var resp wire.NearResponse
	d.observeLookup(ctx, 1)
	if err := d.ep.Call(ctx, p, wire.ProtoNear, req, wire.MaxNearFrame, &resp); err != nil {
		return nil, err
	}
	pstore := d.ep.Raw().Peerstore()
	out := make([]peer.ID, 0, len(resp.Peers))
	for _, rec := range resp.Peers {
		ai, err := ParsePeerRecord(rec)
		if err != nil {
			continue
		}
		if ai.ID != d.ep.ID() && len(ai.Addrs) > 0 {
			pstore.AddAddrs(ai.ID, ai.Addrs, ttl)
		}
		out = append(out, ai.ID)
	}
	SortPeers(pos, out)
	return out, nil
}

// ParsePeerRecord reads a peer record from the network or the store: its
// peer ID, which must parse, and those of its addresses that do (a bad
// address is skipped, not fatal).
func ParsePeerRecord(rec wire.PeerRecord) (peer.AddrInfo, error) {
	id, err := peer.IDFromBytes(rec.ID)
	if err != nil {
		return peer.AddrInfo{}, fmt.Errorf("peer record: %w", err)
	}
	ai := peer.AddrInfo{ID: id}
	for _, b := range rec.Addrs {
		if a, err := multiaddr.NewMultiaddrBytes(b); err == nil {
			ai.Addrs = append(ai.Addrs, a)
		}
	}
	return ai, nil
}

// NearVia asks the peers of via, nearest to key first and skipping those
// marked dead, for their n nearest known peers to key's position until
// one answers (usually one RPC), and returns that answer without the
// peers marked dead here, nearest first. A node near a key knows its
// neighbourhood, so when via are some of the key's nodes (a stale
// replica set) this refreshes them for one request instead of an
// iterative lookup. The answer is one node's word: callers that act on
// it must check what they get, and fall back to a lookup when it fails.
func (d *DHT) NearVia(ctx context.Context, key []byte, via []peer.ID, n int) ([]peer.ID, error) {
	pos := keyspace.KeyPos(key)
	asked := append([]peer.ID(nil), via...)
	SortPeers(pos, asked)
	var errs []error
	for _, p := range asked {
		if p == d.ep.ID() || d.IsMarkedDead(p) {
			continue
		}
		got, err := d.near(ctx, p, &wire.NearRequest{Target: pos[:], Count: uint16(min(max(n, 1), wire.MaxNearCount)), Live: true}, peerstore.TempAddrTTL)
		if err != nil {
			errs = append(errs, fmt.Errorf("near %s: %w", p, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		out := got[:0]
		for _, q := range got {
			if q == d.ep.ID() || !d.IsMarkedDead(q) {
				out = append(out, q)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("none of %d peers answered a near question for %x: %w", len(via), key, errors.Join(errs...))
}
