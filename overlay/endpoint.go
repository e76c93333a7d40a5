package overlay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// Config configures an Endpoint. Zero durations take the defaults.
type Config struct {
	// Verifier checks peers' certificates against the CA and its newest
	// revocation list. Required.
	Verifier *certs.Verifier
	// Cert is this party's DER certificate. Required.
	Cert []byte
	// Position is this party's signed position record (certs.SignedPosition,
	// marshalled), binding the host's peer ID to the certificate key. Required.
	Position []byte
	// Accept lists the peer roles this party admits. Default: node, project,
	// client.
	Accept []certs.Role
	// HelloTimeout is how long a connected peer has to prove its
	// certificate, and how long a request waits for that proof. Default 10 s.
	HelloTimeout time.Duration
	// BlockFor is how long a peer that failed admission is refused
	// connections. Default 1 min.
	BlockFor time.Duration
	// Now reads the clock. Default time.Now.
	Now func() time.Time
	// Logger receives structured logs. Default slog.Default().
	Logger *slog.Logger
	// Metrics receives counters. Default: a fresh registry.
	Metrics *Metrics
	// Blocklist is shared with the host's connection gater, so refused peers
	// cannot reconnect while blocked. Default: a private list.
	Blocklist *Blocklist
	// MinMoveInterval is the least time between two positions of one
	// account this party accepts (moves are rate-limited). Default 0.
	MinMoveInterval time.Duration
	// OnCRL is called after a newer revocation list has been adopted, e.g.
	// to persist it. Optional.
	OnCRL func(*certs.RevocationList)
}

func (c *Config) applyDefaults() {
	if len(c.Accept) == 0 {
		c.Accept = []certs.Role{certs.RoleNode, certs.RoleProject, certs.RoleClient}
	}
	if c.HelloTimeout == 0 {
		c.HelloTimeout = 10 * time.Second
	}
	if c.BlockFor == 0 {
		c.BlockFor = time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
}

// Validate reports a missing or bad setting.
func (c *Config) Validate() error {
	switch {
	case c.Verifier == nil:
		return errors.New("overlay config: no certificate verifier")
	case len(c.Cert) == 0:
		return errors.New("overlay config: no certificate")
	case len(c.Position) == 0:
		return errors.New("overlay config: no position record")
	case c.HelloTimeout < 0 || c.BlockFor < 0:
		return errors.New("overlay config: negative timeout")
	}
	return nil
}

// Endpoint is one party on the overlay: a libp2p host whose /up/ protocols
// are served only to admitted peers.
type Endpoint struct {
	cfg   Config
	raw   host.Host
	gated *gatedHost
	adm   *Admission
	log   *slog.Logger
	m     *Metrics

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	bgMu    sync.Mutex // guards closing against wg.Add racing Close's Wait
	closing bool       // Close has begun: goBackground starts nothing more

	mu           sync.Mutex
	onAdmit      []func(*Admitted)
	onDisconnect []func(peer.ID) // OnDisconnect's hooks
	notifee      *network.NotifyBundle
	// load piggy-backing (SetLoad)
	reportLoad  func() *wire.LoadInfo
	observeLoad func(peer.ID, *wire.LoadInfo)

	hmu      sync.Mutex
	handlers map[protocol.ID]*registered // served protocols, for ProtoMux

	muxMu sync.Mutex
	muxes map[peer.ID]*muxConn // open ProtoMux streams to callees

	workers *workers // run the multiplexed requests served

	answers answers // how peers answered our hellos, for Join

	heard heard // when each connected peer was last heard from (HeardWithin)
}

// SetLoad piggy-backs load figures on RPCs: report gives this node's load
// for every OK reply to a node; observe is told the load a node's reply
// carried (from the calling goroutine: it must not block). Either may be
// nil.
func (e *Endpoint) SetLoad(report func() *wire.LoadInfo, observe func(peer.ID, *wire.LoadInfo)) {
	e.mu.Lock()
	e.reportLoad, e.observeLoad = report, observe
	e.mu.Unlock()
}

func (e *Endpoint) loadHooks() (func() *wire.LoadInfo, func(peer.ID, *wire.LoadInfo)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reportLoad, e.observeLoad
}

// New starts an Endpoint on h: it serves the hello and revocation-list
// protocols and runs the handshake on every new connection.
func New(h host.Host, cfg Config) (*Endpoint, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	own, err := certs.UnmarshalSignedPosition(cfg.Position)
	if err != nil {
		return nil, fmt.Errorf("own position record: %w", err)
	}
	if string(own.Position.PeerID) != string(h.ID()) {
		return nil, fmt.Errorf("own position record names %s, host is %s", peerIDString(own.Position.PeerID), h.ID())
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Endpoint{
		cfg: cfg, raw: h, log: cfg.Logger, m: cfg.Metrics,
		adm:     NewAdmission(cfg.Verifier, cfg.Accept, cfg.Now, cfg.Blocklist),
		ctx:     ctx,
		cancel:  cancel,
		workers: newWorkers(ctx),
	}
	e.gated = &gatedHost{Host: h, e: e}
	e.adm.SetMinMove(cfg.MinMoveInterval)
	e.adm.OnDrop(e.dropped)
	h.SetStreamHandler(wire.ProtoHello, e.handleHello)
	e.Handle(wire.ProtoCRL, 64, nil, e.handleCRL)
	h.SetStreamHandler(wire.ProtoMux, e.handleMux)
	e.Handle(wire.ProtoPing, 16, nil, func(context.Context, *Admitted, []byte) (any, error) { return &wire.Ping{}, nil })
	e.notifee = &network.NotifyBundle{
		ConnectedF:    e.connected,
		DisconnectedF: e.disconnected,
	}
	h.Network().Notify(e.notifee)
	return e, nil
}

// Host is the gated host: stream handlers set on it run only for admitted
// peers. Pass it to kad-dht.
func (e *Endpoint) Host() host.Host { return e.gated }

// Raw is the underlying libp2p host.
func (e *Endpoint) Raw() host.Host { return e.raw }

// ID is this party's peer ID.
func (e *Endpoint) ID() peer.ID { return e.raw.ID() }

// Admission is the admission state of peers.
func (e *Endpoint) Admission() *Admission { return e.adm }

// Metrics are the endpoint's counters.
func (e *Endpoint) Metrics() *Metrics { return e.m }

// Logger is the endpoint's logger.
func (e *Endpoint) Logger() *slog.Logger { return e.log }

// Now reads the endpoint's clock.
func (e *Endpoint) Now() time.Time { return e.cfg.Now() }

// Context ends when the endpoint closes.
func (e *Endpoint) Context() context.Context { return e.ctx }

// OnAdmit registers f to be called whenever a peer is admitted.
func (e *Endpoint) OnAdmit(f func(*Admitted)) {
	e.mu.Lock()
	e.onAdmit = append(e.onAdmit, f)
	e.mu.Unlock()
}

// OnDisconnect registers f to be called whenever the last connection to a
// peer closes (the peer may have left, or a connection manager trimmed
// it). f runs on libp2p's notification goroutine: it must return at once.
func (e *Endpoint) OnDisconnect(f func(peer.ID)) {
	e.mu.Lock()
	e.onDisconnect = append(e.onDisconnect, f)
	e.mu.Unlock()
}

// Close stops the endpoint's background work. It does not close the host.
func (e *Endpoint) Close() error {
	e.raw.Network().StopNotify(e.notifee)
	e.bgMu.Lock()
	e.closing = true
	e.bgMu.Unlock()
	e.cancel()
	e.closeMuxes()
	e.wg.Wait()
	return nil
}

// Hello is the message this party sends to prove itself.
func (e *Endpoint) Hello() *wire.Hello {
	h := &wire.Hello{Version: wire.HelloVersion, Cert: e.cfg.Cert, Position: e.cfg.Position}
	if rl := e.cfg.Verifier.RevocationList(); rl != nil {
		h.CRLNumber = rl.Number.Uint64()
	}
	return h
}

// goBackground runs f in a goroutine Close waits for; once Close has
// begun it runs nothing (a WaitGroup may not grow while it is waited on:
// a hello or a refusal arriving during Close raced it).
func (e *Endpoint) goBackground(f func()) {
	e.bgMu.Lock()
	defer e.bgMu.Unlock()
	if e.closing {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		f()
	}()
}

func (e *Endpoint) connected(_ network.Network, c network.Conn) {
	p := c.RemotePeer()
	if p == e.raw.ID() {
		return
	}
	e.m.Connections.Inc()
	if e.adm.IsBlocked(p) {
		_ = c.Close()
		return
	}
	// Both sides open a handshake on every new connection: whoever proves
	// itself first is served first, and a peer that cannot answer a hello
	// (no certificate, or not speaking the protocol) is dropped at once.
	e.goBackground(func() { e.sayHello(c) })
}

func (e *Endpoint) disconnected(n network.Network, c network.Conn) {
	if c.RemotePeer() == e.raw.ID() {
		return
	}
	e.m.Connections.Dec()
	if n.Connectedness(c.RemotePeer()) != network.Connected {
		e.adm.Forget(c.RemotePeer())
		e.heard.forget(c.RemotePeer())
		e.mu.Lock()
		fs := e.onDisconnect
		e.mu.Unlock()
		for _, f := range fs {
			f(c.RemotePeer())
		}
	}
}

// reject refuses p: records the verdict, blocks it for a while and closes
// its connections.
func (e *Endpoint) reject(p peer.ID, err error) {
	e.refuse(p, err)
	_ = e.raw.Network().ClosePeer(p)
}

// refuseGrace is how long a refused peer's connection stays open after
// the verdict, for the reply that tells it why to reach it.
const refuseGrace = time.Second

// rejectLater refuses p at once, and closes its connections after
// refuseGrace (or at once when the endpoint closes first): blocked, it
// cannot connect again meanwhile, and unadmitted, it is served nothing
// but hellos.
func (e *Endpoint) rejectLater(p peer.ID, err error) {
	e.refuse(p, err)
	e.goBackground(func() {
		t := time.NewTimer(min(refuseGrace, e.cfg.HelloTimeout))
		defer t.Stop()
		select {
		case <-t.C:
		case <-e.ctx.Done():
		}
		_ = e.raw.Network().ClosePeer(p)
	})
}

// refuse records the verdict against p and blocks it for a while.
func (e *Endpoint) refuse(p peer.ID, err error) {
	e.m.Admissions.WithLabelValues("refused").Inc()
	e.adm.Refuse(p, err)
	e.adm.Block(p, e.cfg.Now().Add(e.cfg.BlockFor))
	e.log.Warn("peer refused", "peer", p, "err", err) // once it holds: the log says what is in force
}

// dropped handles a peer that lost its admission.
func (e *Endpoint) dropped(p peer.ID, err error) {
	e.log.Warn("peer dropped", "peer", p, "err", err)
	e.adm.Block(p, e.cfg.Now().Add(e.cfg.BlockFor))
	_ = e.raw.Network().ClosePeer(p)
}

func (e *Endpoint) admitted(adm *Admitted, theirCRL uint64) {
	e.m.Admissions.WithLabelValues("admitted").Inc()
	e.mu.Lock()
	hooks := append([]func(*Admitted){}, e.onAdmit...)
	e.mu.Unlock()
	for _, f := range hooks {
		f(adm)
	}
	var ours uint64
	if rl := e.cfg.Verifier.RevocationList(); rl != nil {
		ours = rl.Number.Uint64()
	}
	if theirCRL > ours {
		e.goBackground(func() { e.fetchCRL(adm.Peer) })
	}
}
