package overlay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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

// ErrRefusedUs reports that every peer a party tried to join through
// refused it for its own certificate (revoked, expired, another CA's, a
// role not admitted): no retry can help.
var ErrRefusedUs = errors.New("refused by every peer tried")

// JoinError is the error of a join through peers that all failed, errs
// one per peer: ErrRefusedUs with the reason when each refused this party
// for its own certificate, otherwise "no peer reachable".
func JoinError(errs []error) error {
	if r, ok := RefusedAboutUs(errs); ok {
		return fmt.Errorf("%w: %w", ErrRefusedUs, r)
	}
	return fmt.Errorf("no peer reachable: %w", errors.Join(errs...))
}

// RetryJoin calls join until it succeeds, ctx ends, tries more tries
// (when not negative) have failed, or it fails with ErrRefusedUs. It waits
// first between tries, doubling up to max, and logs each failure with the
// wait before the next try.
func RetryJoin(ctx context.Context, log *slog.Logger, first, max time.Duration, tries int, join func(context.Context) error) error {
	wait := min(first, max)
	for try := 0; ; try++ {
		err := join(ctx)
		if err == nil || errors.Is(err, ErrRefusedUs) || ctx.Err() != nil || (tries >= 0 && try >= tries) {
			return err
		}
		if tries < 0 {
			log.Warn("join failed; retrying until stopped", "in", wait, "err", err)
		} else {
			log.Warn("join failed, retrying", "in", wait, "try", try+1, "of", tries, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		wait = min(wait*2, max)
	}
}
