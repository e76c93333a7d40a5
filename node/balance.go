package node

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht/grind"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/loadbalance"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/wire"
)

// BalanceConfig configures load balancing by moving positions (thesis
// 3.4, 4.2.1). Zero values take the defaults.
type BalanceConfig struct {
	// Params are the load weights, φ, ΔL_trivial and cool-downs.
	Params loadbalance.Params
	// Interval is the mean time between probes; each waits Interval ±
	// half. Default 40 min (thesis: 20–60 min). Negative: no automatic
	// balancing, neither probes nor reactions to piggy-backed loads (the
	// node still answers others and can be moved by hand).
	Interval time.Duration
	// Capacity is this node's declared capacity, relative (default 1).
	Capacity float64
	// Grinder finds the new identity of a move. Default: secp256k1
	// batched point addition on every core.
	Grinder grind.Grinder
	// GrindTimeout bounds one search for a new identity. Default 5 min.
	GrindTimeout time.Duration
	// MaxGrindBits is the longest prefix this node grinds an identity
	// for: the expected cost doubles with each bit (24 bits take about a
	// core-second), so a heavy node whose split lies deeper is left as it
	// is. Default 28.
	MaxGrindBits int
	// Seed seeds the probes' random keys. Default 1.
	Seed uint64
}

// balance is the node's load-balancing state; it outlives instances.
type balance struct {
	mu         sync.Mutex
	rng        *rand.Rand
	lastMove   int64
	lastChange int64
	moves      int
	served     float64 // requests counted at the last rate sample
	sampled    time.Time
	rate       float64
	reactions  int // balances started by piggy-backed load
	pb         piggyback
	mMoves     prometheus.Counter
	mReactions prometheus.Counter
	mLoad      prometheus.Gauge
}

func (n *Node) balanceCfg() BalanceConfig {
	c := n.cfg.Balance
	c.Params.ApplyDefaults()
	if c.Interval == 0 {
		c.Interval = 40 * time.Minute
	}
	if c.Capacity == 0 {
		c.Capacity = 1
	}
	if c.Grinder == nil {
		c.Grinder = grind.Secp256k1{}
	}
	if c.GrindTimeout == 0 {
		c.GrindTimeout = 5 * time.Minute
	}
	if c.MaxGrindBits == 0 {
		c.MaxGrindBits = 28
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// serveBalance registers the load-balancing protocols and metrics on an
// instance.
func (n *Node) serveBalance(in *instance) {
	n.lb.mu.Lock()
	if n.lb.rng == nil {
		n.lb.rng = rand.New(rand.NewPCG(n.balanceCfg().Seed, keyspace.Seed([]byte(n.id.Cert.Raw), 11)))
	}
	n.lb.mMoves = prometheus.NewCounter(prometheus.CounterOpts{Name: "up_moves_total", Help: "Moves of this node to a new position."})
	n.lb.mLoad = prometheus.NewGauge(prometheus.GaugeOpts{Name: "up_load", Help: "This node's load figure (thesis 3.4)."})
	n.lb.mMoves.Add(float64(n.lb.moves))
	n.lb.mReactions = prometheus.NewCounter(prometheus.CounterOpts{Name: "up_balance_reactions_total",
		Help: "Balances started by a load piggy-backed on another RPC."})
	n.lb.mReactions.Add(float64(n.lb.reactions))
	n.lb.pb.report = nil // a new instance: its first report is computed afresh
	n.lb.mu.Unlock()
	n.servePiggyback(in)
	in.ep.Metrics().Registry.MustRegister(n.lb.mMoves, n.lb.mReactions, n.lb.mLoad, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "up_closest_jobs", Help: "Jobs this node is the closest to.",
	}, func() float64 { _, c := in.pool.Counts(); return float64(c) }))
	nodes := []certs.Role{certs.RoleNode}
	in.ep.Handle(wire.ProtoLoad, 64, nodes, func(context.Context, *overlay.Admitted, []byte) (any, error) {
		return n.loadInfo(in), nil
	})
	in.ep.Handle(wire.ProtoSplit, 64, nodes, func(context.Context, *overlay.Admitted, []byte) (any, error) {
		return n.split(in), nil
	})
	in.ep.Handle(wire.ProtoHandover, 64, nodes, func(ctx context.Context, from *overlay.Admitted, _ []byte) (any, error) {
		return n.handover(ctx, in, from.Peer), nil
	})
	in.ep.Handle(wire.ProtoNudge, 64, nodes, func(_ context.Context, from *overlay.Admitted, _ []byte) (any, error) {
		// Probe back in the background: the move outlives this request
		// (it restarts this node's network stack).
		if !n.startBalance() {
			return &wire.Ping{}, nil
		}
		go func() {
			defer n.lbWG.Done()
			if _, err := n.balanceWith(n.ctx, from.Peer, false); err != nil {
				n.log.Debug("nudged balance", "peer", from.Peer, "err", err)
			}
		}()
		return &wire.Ping{}, nil
	})
}

// Load is the node's current load, as load balancing sees it.
func (n *Node) Load() loadbalance.Load {
	li := n.loadInfo(n.cur())
	return loadbalance.Load{IndexEntries: int(li.IndexEntries), ClosestJobs: int(li.ClosestJobs), Rate: li.Rate,
		Capacity: li.Capacity, LastMove: li.LastMove, LastChange: li.LastChange}
}

func (n *Node) loadInfo(in *instance) *wire.LoadInfo {
	cfg := n.balanceCfg()
	_, closest := in.pool.Counts()
	served := overlay.SumCounter(in.ep.Metrics().RPCReceived, "", "")
	now := n.cfg.Now() // the injected clock: a replayed run measures the same rates
	n.lb.mu.Lock()
	defer n.lb.mu.Unlock()
	if !n.lb.sampled.IsZero() && now.Sub(n.lb.sampled) >= time.Second && served >= n.lb.served {
		n.lb.rate = (served - n.lb.served) / now.Sub(n.lb.sampled).Seconds()
	}
	if n.lb.sampled.IsZero() || now.Sub(n.lb.sampled) >= time.Second {
		n.lb.served, n.lb.sampled = served, now
	}
	li := &wire.LoadInfo{IndexEntries: uint32(in.index.Len()), ClosestJobs: uint32(closest), Rate: n.lb.rate,
		Capacity: cfg.Capacity, LastMove: n.lb.lastMove, LastChange: n.lb.lastChange}
	n.lb.mLoad.Set(loadbalance.Load{IndexEntries: int(li.IndexEntries), ClosestJobs: closest, Rate: li.Rate, Capacity: li.Capacity}.Value(cfg.Params))
	return li
}

// split answers where a newcomer should land to take about half of this
// node's items: never deeper than its nearest neighbours' common prefix, so
// the newcomer takes from this node only.
func (n *Node) split(in *instance) *wire.SplitResponse {
	cfg := n.balanceCfg()
	self := in.dht.Self()
	items := loadbalance.Weighted(nonZero(in.index.Points()), in.pool.ClosestPositions(), cfg.Params)
	var others []keyspace.Pos
	for _, p := range in.dht.NearestLocal(self, 20) {
		if p != in.host.ID() {
			others = append(others, keyspace.PeerPos([]byte(p)))
		}
	}
	target, _, moved, total, ok := loadbalance.SplitFrom(self, items, loadbalance.MinSplitBit(self, others), 0.1)
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
func (n *Node) handover(ctx context.Context, in *instance, newcomer peer.ID) *wire.HandoverResponse {
	self, them := in.dht.Self(), keyspace.PeerPos([]byte(newcomer))
	// Only what the newcomer is now the closest to: an entry of another
	// keyword may be closer to it than to us and still belong elsewhere.
	entries := in.index.Take(func(e index.Entry) bool {
		if e.Point.IsZero() || !keyspace.CloserTo(e.Point, them, self) {
			return false
		}
		v := in.dht.NearestLocal(e.Point, 1)
		return len(v) == 1 && v[0] == newcomer
	})
	resp := &wire.HandoverResponse{}
	resp.Entries = uint32(in.index.Send(ctx, entries, func(index.Entry) peer.ID { return newcomer }))
	var keys [][]byte
	in.pool.Each(func(h pool.Held) bool {
		if keyspace.CloserTo(h.Pos, them, self) {
			if v := in.dht.NearestLocal(h.Pos, 1); len(v) == 1 && v[0] == newcomer {
				keys = append(keys, h.Key)
			}
		}
		return true
	})
	resp.Jobs = uint32(in.pool.Spread(ctx, keys, false))
	n.lb.mu.Lock()
	n.lb.lastChange = n.cfg.Now().UnixMilli()
	n.lb.mu.Unlock()
	return resp
}

// balanceLoop probes now and then (thesis 4.2.1), jittered so nodes do not
// probe in step.
func (n *Node) balanceLoop() {
	cfg := n.balanceCfg()
	if cfg.Interval < 0 {
		return
	}
	for {
		n.lb.mu.Lock()
		wait := cfg.Interval/2 + time.Duration(n.lb.rng.Int64N(int64(cfg.Interval)+1))
		n.lb.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-n.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		d, err := n.BalanceRound(n.ctx)
		if err != nil {
			n.log.Debug("load balance", "err", err)
		} else if d.Verdict != loadbalance.None {
			n.log.Info("load balance", "verdict", d.Verdict, "self", d.Self, "other", d.Other, "reason", d.Reason)
		}
	}
}

// BalanceRound probes the node its routing table holds nearest a random
// key: if this node is much lighter, it moves next to the other and takes
// about half its load.
func (n *Node) BalanceRound(ctx context.Context) (loadbalance.Decision, error) {
	in := n.cur()
	var key [32]byte
	n.lb.mu.Lock()
	for i := range 4 {
		v := n.lb.rng.Uint64()
		for j := range 8 {
			key[i*8+j] = byte(v >> (8 * j))
		}
	}
	n.lb.mu.Unlock()
	// The routing table's nearest node to the key, not a lookup's: the
	// table holds nodes of every distance, so the probe still samples the
	// whole overlay, and it costs no RPC (a lookup is about 20 + 3·log2(N/20)
	// of them; at 1,024 nodes probes were 7 % of all lookup RPCs).
	var other peer.ID
	for _, p := range in.dht.NearestLocal(keyspace.Pos(key), 2) {
		if p != in.host.ID() {
			other = p
			break
		}
	}
	if other == "" {
		return loadbalance.Decision{Reason: "no other node"}, nil
	}
	return n.BalanceWith(ctx, other)
}

// BalanceWith compares this node's load with another's: if this node is
// the much lighter one it moves next to the other; if it is the much
// heavier one it nudges the other to do so.
func (n *Node) BalanceWith(ctx context.Context, other peer.ID) (loadbalance.Decision, error) {
	return n.balanceWith(ctx, other, true)
}

func (n *Node) balanceWith(ctx context.Context, other peer.ID, nudge bool) (loadbalance.Decision, error) {
	cfg := n.balanceCfg()
	in := n.cur()
	var li wire.LoadInfo
	if err := in.ep.Call(ctx, other, wire.ProtoLoad, &wire.Ping{}, 1024, &li); err != nil {
		return loadbalance.Decision{}, err
	}
	theirs := loadbalance.Load{IndexEntries: int(li.IndexEntries), ClosestJobs: int(li.ClosestJobs), Rate: li.Rate,
		Capacity: li.Capacity, LastMove: li.LastMove, LastChange: li.LastChange}
	d := loadbalance.Decide(n.Load(), theirs, n.cfg.Now().UnixMilli(), cfg.Params)
	if d.Verdict == loadbalance.OtherMoves && nudge {
		return d, in.ep.Call(ctx, other, wire.ProtoNudge, &wire.Ping{}, 64, &wire.Ping{})
	}
	if d.Verdict != loadbalance.SelfMoves {
		return d, nil
	}
	var sr wire.SplitResponse
	if err := in.ep.Call(ctx, other, wire.ProtoSplit, &wire.Ping{}, 1024, &sr); err != nil {
		return d, err
	}
	if !sr.OK {
		d.Verdict, d.Reason = loadbalance.None, "the heavy node's load does not split"
		return d, nil
	}
	if int(sr.Bits) > cfg.MaxGrindBits {
		d.Verdict, d.Reason = loadbalance.None, fmt.Sprintf("the heavy node splits at %d bits, deeper than %d to grind", sr.Bits, cfg.MaxGrindBits)
		return d, nil
	}
	var prefix keyspace.Pos
	copy(prefix[:], sr.Prefix)
	heavy := peer.AddrInfo{ID: other, Addrs: in.host.Peerstore().Addrs(other)}
	if err := n.Move(ctx, keyspace.NewRegion(prefix, int(sr.Bits)), heavy); err != nil {
		return d, err
	}
	return d, nil
}

// startBalance counts a background balance in lbWG unless the node is
// closing; the caller runs it and calls lbWG.Done when it reports true.
func (n *Node) startBalance() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ctx.Err() != nil {
		return false
	}
	n.lbWG.Add(1)
	return true
}

// WaitBalance waits for the balancing this node was nudged into.
func (n *Node) WaitBalance() { n.lbWG.Wait() }

// Reactions is how many balances piggy-backed loads started.
func (n *Node) Reactions() int {
	n.lb.mu.Lock()
	defer n.lb.mu.Unlock()
	return n.lb.reactions
}

// Moves is how many times the node moved.
func (n *Node) Moves() int {
	n.lb.mu.Lock()
	defer n.lb.mu.Unlock()
	return n.lb.moves
}

// ErrMoving reports a move while one is in progress.
var ErrMoving = errors.New("a move is in progress")

// Move takes the node to a new position in target, next to heavy: it
// grinds a new identity there, hands its jobs and index entries to the
// nodes that will hold them once it has left, signs the new position with
// its account key (the next sequence number), restarts its network stack
// under the new identity, rejoins, and asks heavy for the items it is now
// closest to.
func (n *Node) Move(ctx context.Context, target keyspace.Region, heavy peer.AddrInfo) error {
	cfg := n.balanceCfg()
	if !n.moving.TryLock() {
		return ErrMoving
	}
	defer n.moving.Unlock()
	gctx, cancel := context.WithTimeout(ctx, cfg.GrindTimeout)
	res, err := cfg.Grinder.Grind(gctx, target)
	cancel()
	if err != nil {
		return fmt.Errorf("move to %s: find an identity there: %w", target, err)
	}
	old := n.cur()
	jobs := old.pool.HandOff(ctx)
	entries := old.index.Take(func(index.Entry) bool { return true })
	self := old.host.ID()
	sent := old.index.Send(ctx, entries, func(e index.Entry) peer.ID {
		for _, p := range old.dht.NearestLocal(e.Point, 3) {
			if p != self {
				return p
			}
		}
		return ""
	})
	n.log.Info("moving", "from", old.dht.Self().Short(), "to", keyspace.PeerPos([]byte(res.ID)).Short(), "bits", target.Bits,
		"tries", res.Tries, "grind", res.Elapsed.Round(time.Millisecond), "jobs_handed", jobs, "entries_handed", sent)
	n.flushPeers()
	if err := n.id.Rotate(res.Key, n.cfg.Now()); err != nil {
		return fmt.Errorf("move: save the new identity: %w", err)
	}
	_ = old.close() // frees the listen port for the new host
	in, err := n.openInstance(nil)
	if err != nil {
		return fmt.Errorf("move: restart under the new identity: %w", err)
	}
	n.mu.Lock()
	n.inst = in
	n.mu.Unlock()
	if n.cfg.OnMove != nil {
		n.cfg.OnMove(self, in.host.ID())
	}
	now := n.cfg.Now().UnixMilli()
	n.lb.mu.Lock()
	n.lb.lastMove, n.lb.lastChange = now, now
	n.lb.moves++
	n.lb.mMoves.Inc()
	n.lb.mu.Unlock()
	peers := append([]peer.AddrInfo{heavy}, n.knownPeers(n.cfg.MaxKnownPeers)...)
	if err := n.Join(ctx, peers); err != nil {
		return fmt.Errorf("move: rejoin: %w", err)
	}
	var ho wire.HandoverResponse
	if err := in.ep.Call(ctx, heavy.ID, wire.ProtoHandover, &wire.Ping{}, 1024, &ho); err != nil {
		return fmt.Errorf("move: hand-over from %s: %w", heavy.ID, err)
	}
	n.log.Info("moved", "position", in.dht.Self().Short(), "entries_taken", ho.Entries, "jobs_taken", ho.Jobs)
	return nil
}
