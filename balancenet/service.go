// Package balancenet is the network shell of U.P.'s load balancing: the
// load, split, hand-over and nudge handlers a node serves, the load it
// piggy-backs on its replies and reads from others', the probe loop, the
// exchanges with another node and the move itself (grind an identity,
// hand everything to the neighbours, restart under the new identity,
// take over half the heavy node's items). Every decision — when to
// probe, whether and whom to react to, who moves, whether a split is worth
// grinding, the cool-downs, the rate, the published load — is
// loadbalance.Controller's, which this package steps and whose actions it
// carries out; the simulator steps the same controller. Package node
// constructs a Service and serves it on each of its instances.
package balancenet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/indexnet"
	"github.com/up-pool/up/loadbalance"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/wire"
)

// Instance is a node's network presence at one position, as balancing
// uses it; a move replaces it.
type Instance struct {
	Endpoint *overlay.Endpoint
	DHT      *dht.DHT
	Pool     *pool.Pool
	Index    *indexnet.Server
}

// Deps is what a Service needs of the node that runs it.
type Deps struct {
	// Current returns the node's current instance. Required.
	Current func() Instance
	// Restart saves key as the node's identity, closes the current
	// instance and opens one under key (serving this Service on it), and
	// returns it. Required.
	Restart func(ctx context.Context, key crypto.PrivKey) (Instance, error)
	// Rejoin joins the overlay again through heavy and the peers the node
	// remembers. Required.
	Rejoin func(ctx context.Context, heavy peer.AddrInfo) error
	// Account is the node's certificate (DER): with Env.Seed it seeds the
	// probes' random waits and keys, so nodes sharing a seed still draw
	// apart.
	Account []byte
	// LastMove is when the node last moved, its position record's time:
	// peers refuse a newer record within the minimum move interval, so
	// the node must not try to move before then either.
	LastMove time.Time
	// Env is the node's clock, its seed (with Account) and its logger,
	// which receives the balancing logs.
	Env overlay.Env
}

// ErrMoving reports a move while one is in progress.
var ErrMoving = errors.New("a move is in progress")

// Service is a node's load balancing; it outlives the node's instances.
type Service struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	moving sync.Mutex // one move at a time

	mu       sync.Mutex
	ctl      *loadbalance.Controller[peer.ID]
	m        metrics
	reported loadbalance.Load // the last report ReportDue published ...
	wire     *wire.LoadInfo   // ... in wire form, shared by the replies
	closed   bool

	ctx    context.Context // background exchanges; ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // background exchanges in flight
}

// metrics are an instance's balancing metrics.
type metrics struct {
	moves, reactions prometheus.Counter
	load             prometheus.Gauge
}

// New returns the balancing service of a node: cfg's defaults applied,
// then validated.
func New(deps Deps, cfg Config) (*Service, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case deps.Current == nil:
		return nil, errors.New("balancenet: Deps.Current is nil")
	case deps.Restart == nil:
		return nil, errors.New("balancenet: Deps.Restart is nil")
	case deps.Rejoin == nil:
		return nil, errors.New("balancenet: Deps.Rejoin is nil")
	}
	deps.Env.ApplyDefaults()
	var lastMove int64
	if !deps.LastMove.IsZero() {
		lastMove = deps.LastMove.UnixMilli()
	}
	rng := rand.New(rand.NewPCG(deps.Env.Seed, keyspace.Seed(deps.Account, 11)))
	ctl, err := loadbalance.NewController[peer.ID](cfg.controller(lastMove), rng)
	if err != nil {
		return nil, fmt.Errorf("balancenet: %w", err)
	}
	s := &Service{cfg: cfg, deps: deps, log: deps.Env.Logger, ctl: ctl}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Config is the service's configuration, defaults applied.
func (s *Service) Config() Config { return s.cfg }

// Serve registers the balancing protocols, metrics and load piggy-backing
// on a new instance of the node.
func (s *Service) Serve(in Instance) {
	m := metrics{
		moves: prometheus.NewCounter(prometheus.CounterOpts{Name: "up_moves_total", Help: "Moves of this node to a new position."}),
		reactions: prometheus.NewCounter(prometheus.CounterOpts{Name: "up_balance_reactions_total",
			Help: "Balances started by a load piggy-backed on another RPC."}),
		load: prometheus.NewGauge(prometheus.GaugeOpts{Name: "up_load", Help: "This node's load figure (thesis 3.4)."}),
	}
	s.mu.Lock()
	m.moves.Add(float64(s.ctl.Moves()))
	m.reactions.Add(float64(s.ctl.Reactions()))
	s.m = m
	s.mu.Unlock()
	in.Endpoint.Metrics().Registry.MustRegister(m.moves, m.reactions, m.load, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "up_closest_jobs", Help: "Jobs this node is the closest to.",
	}, func() float64 { _, c := in.Pool.Counts(); return float64(c) }))
	s.handle(in)
	var observe func(peer.ID, *wire.LoadInfo)
	if !s.cfg.Off {
		observe = func(from peer.ID, li *wire.LoadInfo) { s.observe(in, from, li) }
	}
	in.Endpoint.SetLoad(func() *wire.LoadInfo { return s.report(in) }, observe)
}

// counts are in's holdings now and the requests it served.
func counts(in Instance) *loadbalance.Counts {
	_, closest := in.Pool.Counts()
	return &loadbalance.Counts{IndexEntries: in.Index.Len(), ClosestJobs: closest,
		Served: overlay.SumCounter(in.Endpoint.Metrics().RPCReceived, "", "")}
}

// step steps the controller with ev at the clock's time, counting in's
// holdings when it asks for them.
func (s *Service) step(in Instance, ev loadbalance.Event[peer.ID]) []loadbalance.Action[peer.ID] {
	now := s.deps.Env.Now().UnixMilli()
	acts := s.stepLocked(now, ev)
	if len(acts) == 1 && acts[0].Kind == loadbalance.NeedCounts {
		ev.Counts = counts(in)
		acts = s.stepLocked(now, ev)
	}
	return acts
}

// stepLocked steps the controller under the service's lock and shows each
// load it publishes on the up_load gauge.
func (s *Service) stepLocked(now int64, ev loadbalance.Event[peer.ID]) []loadbalance.Action[peer.ID] {
	s.mu.Lock()
	defer s.mu.Unlock()
	acts := s.ctl.Step(now, ev)
	for _, a := range acts {
		if a.Kind == loadbalance.Publish && s.m.load != nil { // nil before the first Serve
			s.m.load.Set(a.Load.Value(s.cfg.Params))
		}
	}
	return acts
}

// curMetrics are the current instance's metrics.
func (s *Service) curMetrics() metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m
}

// first is the first action of acts; a zero Action if none.
func first(acts []loadbalance.Action[peer.ID]) loadbalance.Action[peer.ID] {
	if len(acts) == 0 {
		return loadbalance.Action[peer.ID]{}
	}
	return acts[0]
}

// Load is the node's current load, freshly counted.
func (s *Service) Load() loadbalance.Load {
	in := s.deps.Current()
	return first(s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.LoadAsked, Counts: counts(in)})).Load
}

// report is the load the node piggy-backs on its replies to nodes.
func (s *Service) report(in Instance) *wire.LoadInfo {
	l := first(s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.ReportDue})).Load
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wire == nil || l != s.reported {
		s.reported, s.wire = l, toWire(l)
	}
	return s.wire
}

// observe reacts to the load a node's reply carried: when the controller
// says so, it balances with that node in the background. It never blocks
// the call that carried the load.
func (s *Service) observe(in Instance, from peer.ID, li *wire.LoadInfo) {
	s.mu.Lock()
	listening := s.ctl.Listening(s.deps.Env.Now().UnixMilli())
	s.mu.Unlock()
	if !listening {
		return
	}
	a := first(s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.Observed, Peer: from, Load: fromWire(li)}))
	if a.Kind != loadbalance.AskLoad {
		return
	}
	s.curMetrics().reactions.Inc()
	ended := func() { s.step(in, loadbalance.Event[peer.ID]{Kind: loadbalance.ReactionEnded}) }
	if !s.background(func(ctx context.Context) {
		defer ended()
		d, err := s.exchange(ctx, a.Peer, a.Nudge)
		if err != nil {
			s.log.Debug("balance on piggy-backed load", "peer", a.Peer, "err", err)
		} else if d.Verdict != loadbalance.None {
			s.log.Info("balance on piggy-backed load", "peer", a.Peer, "verdict", d.Verdict, "self", d.Self, "other", d.Other)
		}
	}) {
		ended()
	}
}

// background runs f in its own goroutine unless the service is closing;
// it reports whether f runs.
func (s *Service) background(f func(ctx context.Context)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(s.ctx)
	}()
	return true
}

// Wait waits for the balancing this node was nudged into or started on a
// piggy-backed load.
func (s *Service) Wait() { s.wg.Wait() }

// Close ends the background exchanges and waits for them; the service
// starts none after.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.cancel()
	s.mu.Unlock()
	s.wg.Wait()
}

// Moves is how many times the node moved.
func (s *Service) Moves() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctl.Moves()
}

// Reactions is how many balances piggy-backed loads started.
func (s *Service) Reactions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctl.Reactions()
}

func fromWire(li *wire.LoadInfo) loadbalance.Load {
	return loadbalance.Load{IndexEntries: int(li.IndexEntries), ClosestJobs: int(li.ClosestJobs), Rate: li.Rate,
		Capacity: li.Capacity, LastMove: li.LastMove, LastChange: li.LastChange}
}

func toWire(l loadbalance.Load) *wire.LoadInfo {
	return &wire.LoadInfo{IndexEntries: uint32(l.IndexEntries), ClosestJobs: uint32(l.ClosestJobs), Rate: l.Rate,
		Capacity: l.Capacity, LastMove: l.LastMove, LastChange: l.LastChange}
}
