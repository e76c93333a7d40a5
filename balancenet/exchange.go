package balancenet

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/loadbalance"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// Run probes now and then until ctx ends (thesis 4.2.1): each wait is
// the controller's, jittered so nodes do not probe in step. It returns at
// once when balancing is off.
func (s *Service) Run(ctx context.Context) {
	acts := s.step(s.deps.Current(), loadbalance.Event[peer.ID]{Kind: loadbalance.Start})
	for {
		wait := time.Duration(-1)
		for _, a := range acts {
			switch a.Kind {
			case loadbalance.ScheduleProbe:
				wait = time.Duration(a.After) * time.Millisecond
			case loadbalance.ProbeNear:
				d, err := s.probeNear(ctx, a.Key)
				if err != nil {
					s.log.Debug("load balance", "err", err)
				} else if d.Verdict != loadbalance.None {
					s.log.Info("load balance", "verdict", d.Verdict, "self", d.Self, "other", d.Other, "reason", d.Reason)
				}
			}
		}
		if wait < 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		acts = s.step(s.deps.Current(), loadbalance.Event[peer.ID]{Kind: loadbalance.ProbeDue})
	}
}

// BalanceRound probes the node the routing table holds nearest a random
// key: if this node is much lighter, it moves next to the other and takes
// about half its load; if much heavier, it nudges the other to.
func (s *Service) BalanceRound(ctx context.Context) (loadbalance.Decision, error) {
	a := first(s.step(s.deps.Current(), loadbalance.Event[peer.ID]{Kind: loadbalance.ProbeNow}))
	return s.probeNear(ctx, a.Key)
}

// probeNear balances with the node nearest key. The routing table's
// nearest, not a lookup's: the table holds nodes of every distance, so the
// probe still samples the whole overlay, and it costs no RPC (a lookup is
// about 20 + 3·log2(N/20) of them; at 1,024 nodes probes were 7 % of all
// lookup RPCs).
func (s *Service) probeNear(ctx context.Context, key keyspace.Pos) (loadbalance.Decision, error) {
	in := s.deps.Current()
	for _, p := range in.DHT.NearestLocal(key, 2) {
		if p != in.Endpoint.ID() {
			return s.exchange(ctx, p, true)
		}
	}
	return loadbalance.Decision{Reason: "no other node"}, nil
}

// BalanceWith compares this node's load with another's: if this node is
// the much lighter one it moves next to the other; if it is the much
// heavier one it nudges the other to do so.
func (s *Service) BalanceWith(ctx context.Context, other peer.ID) (loadbalance.Decision, error) {
	return s.exchange(ctx, other, true)
}

// exchange runs one exchange with other, carrying out the controller's
// actions: ask its load, then nudge it, or ask where to land and move.
func (s *Service) exchange(ctx context.Context, other peer.ID, nudge bool) (loadbalance.Decision, error) {
	in := s.deps.Current()
	var li wire.LoadInfo
	if err := in.Endpoint.Call(ctx, other, wire.ProtoLoad, &wire.Ping{}, 1024, &li); err != nil {
		return loadbalance.Decision{}, err
	}
	a := first(s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.LoadAnswered, Peer: other, Load: fromWire(&li),
		Counts: counts(in), Nudge: nudge}))
	switch a.Kind {
	case loadbalance.SendNudge:
		return a.Decision, in.Endpoint.Call(ctx, other, wire.ProtoNudge, &wire.Ping{}, 64, &wire.Ping{})
	case loadbalance.AskSplit:
	default:
		return a.Decision, nil
	}
	var sr wire.SplitResponse
	if err := in.Endpoint.Call(ctx, other, wire.ProtoSplit, &wire.Ping{}, 1024, &sr); err != nil {
		return a.Decision, err
	}
	ans := loadbalance.SplitAnswer{OK: sr.OK, Bits: int(sr.Bits)}
	copy(ans.Prefix[:], sr.Prefix)
	a = first(s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.SplitAnswered, Peer: other, Split: ans, Decision: a.Decision}))
	if a.Kind != loadbalance.MoveTo {
		return a.Decision, nil
	}
	heavy := peer.AddrInfo{ID: other, Addrs: in.Endpoint.Host().Peerstore().Addrs(other)}
	return a.Decision, s.Move(ctx, a.Target, heavy)
}

// handle registers the balancing protocols on in's endpoint.
func (s *Service) handle(in Instance) {
	nodes := []certs.Role{certs.RoleNode}
	in.Endpoint.Handle(wire.ProtoLoad, 64, nodes, func(context.Context, *overlay.Admitted, []byte) (any, error) {
		return toWire(first(s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.LoadAsked, Counts: counts(in)})).Load), nil
	})
	in.Endpoint.Handle(wire.ProtoSplit, 64, nodes, func(context.Context, *overlay.Admitted, []byte) (any, error) {
		return s.split(in), nil
	})
	in.Endpoint.Handle(wire.ProtoHandover, 64, nodes, func(ctx context.Context, from *overlay.Admitted, _ []byte) (any, error) {
		return s.handover(ctx, in, from.Peer), nil
	})
	in.Endpoint.Handle(wire.ProtoNudge, 64, nodes, func(_ context.Context, from *overlay.Admitted, _ []byte) (any, error) {
		// Probe back in the background: the move outlives this request
		// (it restarts this node's network stack).
		a := first(s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.Nudged, Peer: from.Peer}))
		if a.Kind == loadbalance.AskLoad {
			s.background(func(ctx context.Context) {
				if _, err := s.exchange(ctx, a.Peer, a.Nudge); err != nil {
					s.log.Debug("nudged balance", "peer", a.Peer, "err", err)
				}
			})
		}
		return &wire.Ping{}, nil
	})
}
