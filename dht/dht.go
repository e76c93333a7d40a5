package dht

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	pb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// DHT is one party's kad-dht instance and the U.P. keyspace services on it.
type DHT struct {
	cfg   Config
	env   overlay.Env
	ep    *overlay.Endpoint
	kad   *kaddht.IpfsDHT
	cache *lookupCache
	self  keyspace.Pos
	live  liveness
	added peerHooks
	down  peerHooks // OnPeerDown's hooks (departed.go)
	left  departed
	table tableCache // the routing table's peers and positions (table.go)

	lookups      atomic.Int64 // lookups that went to the network
	cachedHits   atomic.Int64 // lookups answered from the cache
	lookupRPCs   atomic.Int64 // FIND_NODE requests sent by lookups
	walks        atomic.Int64 // Walks run
	walkRPCs     atomic.Int64 // near questions sent by Walks
	mLookups     *prometheus.CounterVec
	mLookupRPCs  prometheus.Counter
	mDHTReceived *prometheus.CounterVec

	crawlMu sync.Mutex
	crawled *crawlView // nil until Crawl

	serving atomic.Bool // auto mode: kad-dht serves now (its handler is set)

	sweepKick chan struct{} // a peer was dropped: sweep the routing table soon
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

// New starts kad-dht on the endpoint's gated host, so only admitted peers
// are served, and only admitted nodes enter the routing table: cfg's
// defaults applied, then validated.
func New(deps Deps, cfg Config) (*DHT, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	deps.Env.ApplyDefaults()
	ep := deps.Endpoint
	d := &DHT{
		cfg:   cfg,
		env:   deps.Env,
		ep:    ep,
		cache: newLookupCache(cfg.LookupCacheSize),
		self:  keyspace.PeerPos([]byte(ep.ID())),
		live:  liveness{dead: make(map[peer.ID]deadMark)},

		sweepKick: make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	d.registerMetrics(ep.Metrics().Registry)
	if cfg.Mode == ModeAuto {
		if err := d.followServing(); err != nil {
			return nil, err
		}
	}
	adm := ep.Admission()
	kad, err := kaddht.New(ep.Host(), d.kadOptions(adm)...)
	if err != nil {
		close(d.done)
		return nil, fmt.Errorf("start kad-dht: %w", err)
	}
	d.kad = kad
	d.hookPeerAdded()
	d.hookPeerRemoved()
	ep.OnDisconnect(d.peerDown)
	d.followAdmission(ep, adm)
	go d.sweepLoop(adm)
	if cfg.Mode != ModeClient { // in auto mode others ask only while it serves
		ep.Handle(wire.ProtoNear, wire.MaxNearFrame, nil, d.handleNear)
	}
	return d, nil
}

// kadOptions configures kad-dht: U.P.'s protocol prefix, no providers or
// values, and admission deciding who may enter the routing table and be
// queried; every request is counted by type and role.
func (d *DHT) kadOptions(adm *overlay.Admission) []kaddht.Option {
	cfg := d.cfg
	mode := kaddht.ModeServer
	switch cfg.Mode {
	case ModeClient:
		mode = kaddht.ModeClient
	case ModeAuto:
		mode = kaddht.ModeAuto
	}
	opts := []kaddht.Option{
		kaddht.Mode(mode),
		kaddht.ProtocolPrefix(wire.DHTPrefix),
		kaddht.BucketSize(cfg.BucketSize),
		kaddht.Concurrency(cfg.Concurrency),
		kaddht.DisableProviders(),
		kaddht.DisableValues(),
		kaddht.RoutingTableFilter(func(_ any, p peer.ID) bool {
			return adm.IsAdmitted(p, certs.RoleNode)
		}),
		kaddht.QueryFilter(func(_ any, ai peer.AddrInfo) bool {
			return !adm.IsBlocked(ai.ID)
		}),
		kaddht.OnRequestHook(func(_ context.Context, s network.Stream, req *pb.Message) {
			role := "unknown"
			if a, ok := adm.Get(s.Conn().RemotePeer()); ok {
				role = string(a.Role())
			}
			d.mDHTReceived.WithLabelValues(req.GetType().String(), role).Inc()
		}),
	}
	if cfg.DisableAutoRefresh {
		opts = append(opts, kaddht.DisableAutoRefresh())
	}
	if len(cfg.Bootstrap) > 0 {
		opts = append(opts, kaddht.BootstrapPeers(cfg.Bootstrap...))
	}
	return opts
}

// followAdmission lets admission decide routing-table membership: a node
// enters as soon as it has proven itself, and leaves when it loses
// admission.
func (d *DHT) followAdmission(ep *overlay.Endpoint, adm *overlay.Admission) {
	kad := d.kad
	ep.OnAdmit(func(a *overlay.Admitted) {
		if a.Role() == certs.RoleNode {
			if !servesDHT(ep, a.Peer) {
				// A node in client mode (not reachable, or not yet
				// known to be): kad-dht adds it when identify says it
				// serves the protocol.
				return
			}
			revived := d.wasMarkedDead(a.Peer)
			d.markAlive(a.Peer)
			added, _ := kad.RoutingTable().TryAddPeer(a.Peer, true, false)
			if !added && revived && kad.RoutingTable().Find(a.Peer) != "" {
				d.peerAdded(a.Peer) // back in every view, as if it joined
			}
			// The peer may have been dropped (say, revoked) between its
			// admission and this hook, after the drop's RemovePeer ran.
			if !adm.IsAdmitted(a.Peer, certs.RoleNode) {
				kad.RoutingTable().RemovePeer(a.Peer)
			}
		}
	})
	adm.OnDrop(func(p peer.ID, _ error) {
		kad.RoutingTable().RemovePeer(p)
		d.cache.purgePeer(p)
		select {
		case d.sweepKick <- struct{}{}:
		default:
		}
	})
}

// servesDHT reports whether p may serve the DHT as far as identify told:
// false only when its protocols are known and the DHT's is not among them.
// Unknown protocols (identify still running) count as serving; kad-dht
// removes the peer when identify completes without the protocol.
func servesDHT(ep *overlay.Endpoint, p peer.ID) bool {
	known, err := ep.Host().Peerstore().GetProtocols(p)
	if err != nil || len(known) == 0 {
		return true
	}
	return slices.Contains(known, protocol.ID(wire.DHTProtocol))
}

func (d *DHT) registerMetrics(r *prometheus.Registry) {
	d.mLookups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_lookups_total", Help: "Closest-peers lookups, by source (cache, network).",
	}, []string{"source"})
	d.mLookupRPCs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "up_lookup_rpcs_total", Help: "FIND_NODE requests sent by this party's lookups.",
	})
	d.mDHTReceived = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "up_dht_requests_received_total", Help: "kad-dht requests served, by message type and peer role.",
	}, []string{"type", "role"})
	r.MustRegister(d.mLookups, d.mLookupRPCs, d.mDHTReceived)
}

// Kad is the underlying kad-dht instance.
func (d *DHT) Kad() *kaddht.IpfsDHT { return d.kad }

// Replication is r.
func (d *DHT) Replication() int { return d.cfg.Replication }

// ID is this party's peer ID.
func (d *DHT) ID() peer.ID { return d.ep.ID() }

// IsServer reports whether this party serves the DHT now (is a node): in
// auto mode, whether kad-dht has switched to server on the host's
// reachability. A party that does not serve is in no routing table, so
// it is never nearest a key nor a replica.
func (d *DHT) IsServer() bool {
	if d.cfg.Mode == ModeAuto {
		return d.serving.Load()
	}
	return d.cfg.Mode == ModeServer
}

// followServing keeps d.serving up to date in auto mode: kad-dht switches
// by setting or removing its protocol handler, which the host announces.
func (d *DHT) followServing() error {
	h := d.ep.Host()
	sub, err := h.EventBus().Subscribe(new(event.EvtLocalProtocolsUpdated))
	if err != nil {
		return fmt.Errorf("dht: follow mode: %w", err)
	}
	check := func() {
		d.serving.Store(slices.Contains(h.Mux().Protocols(), protocol.ID(wire.DHTProtocol)))
	}
	check()
	go func() {
		defer sub.Close()
		for {
			select {
			case <-d.done:
				return
			case _, ok := <-sub.Out():
				if !ok {
					return
				}
				check()
			}
		}
	}()
	return nil
}

// Mode is the configured mode (server, client or auto).
func (d *DHT) Mode() Mode { return d.cfg.Mode }

// Endpoint is the party's overlay endpoint.
func (d *DHT) Endpoint() *overlay.Endpoint { return d.ep }

// Self is this party's position.
func (d *DHT) Self() keyspace.Pos { return d.self }

// Close stops kad-dht.
func (d *DHT) Close() error {
	d.closeOnce.Do(func() { close(d.done) })
	return d.kad.Close()
}

// sweepInterval is how often the routing table is swept of peers no
// longer admitted; sweepDelay is how long after a drop it is swept again.
const sweepInterval, sweepDelay = 30 * time.Second, time.Second

// sweepLoop sweeps the routing table now and then, and shortly after each
// drop: kad-dht checks the routing-table filter when it finds a peer but
// adds it later, from a queue, so a peer found just before its drop can
// enter the table after the drop removed it.
func (d *DHT) sweepLoop(adm *overlay.Admission) {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-t.C:
		case <-d.sweepKick:
			delay := time.NewTimer(sweepDelay)
			select {
			case <-d.done:
				delay.Stop()
				return
			case <-delay.C:
			}
		}
		d.sweepRoutingTable(adm)
	}
}

// sweepRoutingTable removes the peers not admitted as nodes from the
// routing table and returns how many it removed.
func (d *DHT) sweepRoutingTable(adm *overlay.Admission) int {
	n := 0
	for _, p := range d.kad.RoutingTable().ListPeers() {
		if !adm.IsAdmitted(p, certs.RoleNode) {
			d.kad.RoutingTable().RemovePeer(p)
			n++
		}
	}
	return n
}

// Bootstrap dials the configured bootstrap peers and refreshes the routing
// table once.
func (d *DHT) Bootstrap(ctx context.Context) error {
	return d.kad.Bootstrap(ctx)
}

// RoutingTableSize is the number of peers in the routing table.
func (d *DHT) RoutingTableSize() int { return d.kad.RoutingTable().Size() }

// RoutingTablePeers lists the routing table.
func (d *DHT) RoutingTablePeers() []peer.ID { return d.kad.RoutingTable().ListPeers() }

// AddToRoutingTable puts an admitted node straight into the routing table
// (the testnet's fast bootstrap).
func (d *DHT) AddToRoutingTable(p peer.ID) (bool, error) {
	return d.kad.RoutingTable().TryAddPeer(p, true, false)
}

// LookupStats are counts of lookups since start.
type LookupStats struct {
	Network int64 `json:"network"` // lookups that went to the network
	Cached  int64 `json:"cached"`  // lookups answered from the cache
	RPCs    int64 `json:"rpcs"`    // FIND_NODE requests the network lookups sent
}

// Stats returns the lookup counts so far.
func (d *DHT) Stats() LookupStats {
	return LookupStats{Network: d.lookups.Load(), Cached: d.cachedHits.Load(), RPCs: d.lookupRPCs.Load()}
}

// NearestLocal returns up to n peers nearest to the raw position pos from
// the local view: the routing table, plus this party itself when it serves
// the DHT. Nearest first; no RPC. It selects from the table's snapshot
// (TablePositions: positions hashed once per change of the table) in one
// pass keeping the n best, where ranking through kad-dht's table sorted
// and re-hashed every peer per call (a republish round ranks every held
// job).
func (d *DHT) NearestLocal(pos keyspace.Pos, n int) []peer.ID {
	if n <= 0 {
		return nil
	}
	table := d.TablePositions()
	var best []ranked
	if n*4 < len(table) { // few of many: one pass keeping the n best
		best = make([]ranked, 0, n)
		for _, q := range table {
			best = keepNearest(best, n, ranked{keyspace.Distance(q.Pos, pos), q.ID})
		}
	} else { // most of the table: sort it
		best = make([]ranked, len(table), len(table)+1)
		for i, q := range table {
			best[i] = ranked{keyspace.Distance(q.Pos, pos), q.ID}
		}
		slices.SortFunc(best, func(a, b ranked) int { return keyspace.Compare(a.d, b.d) })
		best = best[:min(n, len(best))]
	}
	if d.IsServer() {
		self := d.ep.ID()
		best = keepNearest(best, n, ranked{keyspace.Distance(keyspace.PeerPos([]byte(self)), pos), self})
	}
	out := make([]peer.ID, len(best))
	for i, r := range best {
		out[i] = r.p
	}
	return out
}

// ranked is a peer with its distance to a position.
type ranked struct {
	d keyspace.Pos
	p peer.ID
}

// keepNearest inserts r into best, sorted nearest first and at most n
// long, when it is nearer than best's farthest or best has room.
func keepNearest(best []ranked, n int, r ranked) []ranked {
	if len(best) == n && keyspace.Compare(r.d, best[n-1].d) >= 0 {
		return best
	}
	i := len(best)
	for i > 0 && keyspace.Compare(r.d, best[i-1].d) < 0 {
		i--
	}
	if len(best) < n {
		best = append(best, ranked{})
	}
	copy(best[i+1:], best[i:len(best)-1])
	best[i] = r
	return best
}

// SortPeers sorts peers by the XOR distance of their positions to pos.
func SortPeers(pos keyspace.Pos, ps []peer.ID) {
	if len(ps) < 2 {
		return
	}
	// One hash per peer, not two per comparison.
	type byDist struct {
		d keyspace.Pos
		p peer.ID
	}
	tmp := make([]byDist, len(ps))
	for i, p := range ps {
		tmp[i] = byDist{keyspace.Distance(keyspace.PeerPos([]byte(p)), pos), p}
	}
	slices.SortStableFunc(tmp, func(a, b byDist) int { return keyspace.Compare(a.d, b.d) })
	for i := range tmp {
		ps[i] = tmp[i].p
	}
}

// SelfNearestFunc returns a test of whether this node is nearer a position
// than every peer of its routing table as it is now (NearestLocal(pos, 1)
// is this node), with the peers' positions hashed once: for checking many
// positions in a row, at a few XORs per peer each. A party that does not
// serve the DHT is never nearest.
func (d *DHT) SelfNearestFunc() func(pos keyspace.Pos) bool {
	if !d.IsServer() {
		return func(keyspace.Pos) bool { return false }
	}
	ps, me, self := d.TablePositions(), d.ep.ID(), d.self
	return func(pos keyspace.Pos) bool {
		for _, q := range ps {
			if q.ID != me && keyspace.CloserTo(pos, q.Pos, self) {
				return false
			}
		}
		return true
	}
}
