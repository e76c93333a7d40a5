package balancenet

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/loadbalance"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/wire"
)

// splitSlack is SplitFrom's slack for the split this node answers.
const splitSlack = 0.1

// split answers where a newcomer should land to take about half of this
// node's items: never deeper than its nearest neighbours' common prefix, so
// the newcomer takes from this node only.
func (s *Service) split(in Instance) *wire.SplitResponse {
	self := in.DHT.Self()
	items := loadbalance.Weighted(nonZero(in.Index.Points()), in.Pool.ClosestPositions(), s.cfg.Params)
	var others []keyspace.Pos
	for _, p := range in.DHT.NearestLocal(self, 20) {
		if p != in.Endpoint.ID() {
			others = append(others, keyspace.PeerPos([]byte(p)))
		}
	}
	target, _, moved, total, ok := loadbalance.SplitFrom(self, items, loadbalance.MinSplitBit(self, others), splitSlack)
	if !ok {
		return &wire.SplitResponse{}
	}
	return &wire.SplitResponse{OK: true, Prefix: target.Prefix[:], Bits: uint16(target.Bits), Moved: moved, Total: total}
}

func nonZero(ps []keyspace.Pos) []keyspace.Pos {
	return slices.DeleteFunc(ps, func(p keyspace.Pos) bool { return p.IsZero() })
}

// handover gives a node that moved in next to this one the items it is
// now closer to: the index entries whose points it is closer to, and the
// jobs this node was the closest to and it now is.
func (s *Service) handover(ctx context.Context, in Instance, newcomer peer.ID) *wire.HandoverResponse {
	self, them := in.DHT.Self(), keyspace.PeerPos([]byte(newcomer))
	// Only what the newcomer is now the closest to: an entry of another
	// keyword may be closer to it than to us and still belong elsewhere.
	entries := in.Index.Take(func(e index.Entry) bool {
		if e.Point.IsZero() || !keyspace.CloserTo(e.Point, them, self) {
			return false
		}
		v := in.DHT.NearestLocal(e.Point, 1)
		return len(v) == 1 && v[0] == newcomer
	})
	resp := &wire.HandoverResponse{}
	resp.Entries = uint32(in.Index.Send(ctx, entries, func(index.Entry) peer.ID { return newcomer }))
	var keys [][]byte
	in.Pool.Each(func(h pool.Held) bool {
		if keyspace.CloserTo(h.Pos, them, self) {
			if v := in.DHT.NearestLocal(h.Pos, 1); len(v) == 1 && v[0] == newcomer {
				keys = append(keys, h.Key)
			}
		}
		return true
	})
	resp.Jobs = uint32(in.Pool.Spread(ctx, keys, false))
	s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.HandedOver})
	return resp
}

// Move takes the node to a new position in target, next to heavy: it
// grinds a new identity there, hands its jobs and index entries to the
// nodes that will hold them once it has left, restarts under the new
// identity (Deps.Restart: the node signs the new position with its
// account key, the next sequence number), rejoins, and asks heavy for the
// items it is now closest to.
func (s *Service) Move(ctx context.Context, target keyspace.Region, heavy peer.AddrInfo) error {
	if !s.moving.TryLock() {
		return ErrMoving
	}
	defer s.moving.Unlock()
	gctx, cancel := context.WithTimeout(ctx, s.cfg.GrindTimeout)
	res, err := s.cfg.Grinder.Grind(gctx, target)
	cancel()
	if err != nil {
		return fmt.Errorf("move to %s: find an identity there: %w", target, err)
	}
	old := s.deps.Current()
	jobs := old.Pool.HandOff(ctx)
	entries := old.Index.Take(func(index.Entry) bool { return true })
	self := old.Endpoint.ID()
	sent := old.Index.Send(ctx, entries, func(e index.Entry) peer.ID {
		for _, p := range old.DHT.NearestLocal(e.Point, 3) {
			if p != self {
				return p
			}
		}
		return ""
	})
	s.log.Info("moving", "from", old.DHT.Self().Short(), "to", keyspace.PeerPos([]byte(res.ID)).Short(), "bits", target.Bits,
		"tries", res.Tries, "grind", res.Elapsed.Round(time.Millisecond), "jobs_handed", jobs, "entries_handed", sent)
	in, err := s.deps.Restart(ctx, res.Key)
	if err != nil {
		return err
	}
	s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.Moved})
	s.curMetrics().moves.Inc()
	if err := s.deps.Rejoin(ctx, heavy); err != nil {
		return fmt.Errorf("move: rejoin: %w", err)
	}
	var ho wire.HandoverResponse
	if err := in.Endpoint.Call(ctx, heavy.ID, wire.ProtoHandover, &wire.Ping{}, 1024, &ho); err != nil {
		return fmt.Errorf("move: hand-over from %s: %w", heavy.ID, err)
	}
	s.log.Info("moved", "position", in.DHT.Self().Short(), "entries_taken", ho.Entries, "jobs_taken", ho.Jobs)
	return nil
}
