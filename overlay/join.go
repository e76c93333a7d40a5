package overlay

import (
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/sec"
)

// Connect dials ai. When the address answers under another peer ID (the
// node there moved to a new position, so a bootstrap address written
// down before the move names its old ID), it dials that ID at the same
// addresses instead: a bootstrap address names a host to reach, and
// admission, not the peer ID, decides whom to trust. It returns the peer
// ID it connected to.
func Connect(ctx context.Context, h host.Host, ai peer.AddrInfo) (peer.ID, error) {
	err := h.Connect(ctx, ai)
	var moved sec.ErrPeerIDMismatch
	if err == nil || !errors.As(err, &moved) || moved.Actual == "" || moved.Actual == ai.ID || moved.Actual == h.ID() {
		return ai.ID, err
	}
	next := peer.AddrInfo{ID: moved.Actual, Addrs: ai.Addrs}
	if err := h.Connect(ctx, next); err != nil {
		return "", fmt.Errorf("%s moved to %s: %w", ai.ID, moved.Actual, err)
	}
	return moved.Actual, nil
}

// Join connects to ai (following a moved node, see Connect), waits for
// the peer there to answer this party's hello and until it is admitted
// here. A peer that refuses this party fails the join with a
// *RefusedError saying why.
func (e *Endpoint) Join(ctx context.Context, ai peer.AddrInfo) (*Admitted, error) {
	if e.raw.Network().Connectedness(ai.ID) != network.Connected {
		e.answers.reset(ai.ID) // an answer on an old connection is stale
	}
	id, err := Connect(ctx, e.raw, ai)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, e.cfg.HelloTimeout)
	defer cancel()
	if err := e.answers.wait(wctx, id); err != nil {
		return nil, err
	}
	return e.WaitAdmitted(ctx, id)
}
