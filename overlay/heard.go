package overlay

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// heard remembers, per connected peer, when (this party's clock) it last
// answered one of our requests or sent us one: liveness learned from the
// traffic already flowing, so that probes (dht.Prober) ask only about
// peers not heard from lately. A peer is forgotten when its last
// connection closes, which bounds the table by the connections.
type heard struct {
	mu sync.Mutex
	at map[peer.ID]time.Time
}

// mark records that p was heard from at now.
func (h *heard) mark(p peer.ID, now time.Time) {
	h.mu.Lock()
	if h.at == nil {
		h.at = map[peer.ID]time.Time{}
	}
	h.at[p] = now
	h.mu.Unlock()
}

// forget drops p (its connections closed).
func (h *heard) forget(p peer.ID) {
	h.mu.Lock()
	delete(h.at, p)
	h.mu.Unlock()
}

// since reports whether p was heard from at or after t.
func (h *heard) since(p peer.ID, t time.Time) bool {
	h.mu.Lock()
	at, ok := h.at[p]
	h.mu.Unlock()
	return ok && !at.Before(t)
}

// HeardWithin reports whether p answered a request of ours, or sent us
// one, within the last d on this party's clock (and is still connected).
// A reply with an error status counts: the peer is up.
func (e *Endpoint) HeardWithin(p peer.ID, d time.Duration) bool {
	return e.heard.since(p, e.cfg.Now().Add(-d)) && e.raw.Network().Connectedness(p) == network.Connected
}
