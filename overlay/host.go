package overlay

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"
)

// HostConfig configures a libp2p host for the overlay.
type HostConfig struct {
	// Key is the host's libp2p identity. Required.
	Key crypto.PrivKey
	// Listen are the multiaddrs to listen on; none for a dial-only party.
	Listen []multiaddr.Multiaddr
	// Blocklist refuses connections from and to blocked peers. Optional.
	Blocklist *Blocklist
	// ConnLow and ConnHigh are the connection manager's watermarks.
	// Defaults 200 and 400.
	ConnLow, ConnHigh int
	// Bandwidth, when set, counts the bytes the host sends and receives.
	Bandwidth metrics.Reporter
	// Registerer receives libp2p's own metrics; nil disables them (use nil
	// when many hosts share a process).
	Registerer prometheus.Registerer
	// ResourceMetrics reports the resource manager's per-scope events to
	// Prometheus as libp2p does by default. Off by default: under load the
	// reporter cost about 5 % of the process's CPU (up bench profile).
	ResourceMetrics bool
	// Reachability, when set, turns on libp2p's services for learning and
	// improving whether the network can dial the host (AutoNAT, port
	// mapping, relays, hole punching) and the announce filter; nil: none
	// of them and no relay transport (dial-only parties, tests).
	Reachability *Reachability
}

// NewHost builds a libp2p host with two transports, TCP (Noise, yamux)
// and QUIC v1 (its own TLS 1.3 and streams; it hole-punches better than
// TCP), the default resource manager, a connection manager and the
// blocklist as gater. Admission (the hello) is the same on both: it binds
// the signed position record to the peer ID the transport's handshake
// proved.
func NewHost(cfg HostConfig) (host.Host, error) {
	if cfg.Key == nil {
		return nil, fmt.Errorf("new host: no identity key")
	}
	if cfg.ConnLow == 0 {
		cfg.ConnLow = 200
	}
	if cfg.ConnHigh == 0 {
		cfg.ConnHigh = 400
	}
	cm, err := connmgr.NewConnManager(cfg.ConnLow, cfg.ConnHigh, connmgr.WithGracePeriod(time.Minute))
	if err != nil {
		return nil, fmt.Errorf("new host: connection manager: %w", err)
	}
	// libp2p's default resource manager and limits, with its per-event
	// metrics reporter only when asked for.
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	var rcOpts []rcmgr.Option
	if !cfg.ResourceMetrics {
		rcOpts = append(rcOpts, rcmgr.WithMetricsDisabled())
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits.AutoScale()), rcOpts...)
	if err != nil {
		return nil, fmt.Errorf("new host: resource manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(cfg.Key),
		libp2p.ResourceManager(rm),
		// No SO_REUSEPORT: a port another process listens on (a second
		// party started on the same --listen) must fail to bind, not be
		// shared with it silently.
		libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport()),
		libp2p.Transport(libp2pquic.NewTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ConnectionManager(cm),
		libp2p.Ping(false),
	}
	if r := cfg.Reachability; r != nil {
		ro, err := r.options()
		if err != nil {
			return nil, fmt.Errorf("new host: %w", err)
		}
		opts = append(opts, ro...)
	} else {
		opts = append(opts, libp2p.DisableRelay())
	}
	if len(cfg.Listen) > 0 {
		opts = append(opts, libp2p.ListenAddrs(cfg.Listen...))
	} else {
		opts = append(opts, libp2p.NoListenAddrs)
	}
	if cfg.Blocklist != nil {
		opts = append(opts, libp2p.ConnectionGater(cfg.Blocklist))
	}
	if cfg.Bandwidth != nil {
		opts = append(opts, libp2p.BandwidthReporter(cfg.Bandwidth))
	}
	if cfg.Registerer != nil {
		opts = append(opts, libp2p.PrometheusRegisterer(cfg.Registerer))
	} else {
		opts = append(opts, libp2p.DisableMetrics())
	}
	h, err := libp2p.New(opts...)
	// libp2p flattens the listeners' errors into text ("failed to listen
	// on any addresses: [...]"), so EADDRINUSE is found by its message.
	if err != nil && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), syscall.EADDRINUSE.Error())) {
		return nil, fmt.Errorf("listen address %s is in use (another process listens there): %w", joinAddrs(cfg.Listen), err)
	}
	if err != nil {
		return nil, fmt.Errorf("new host: %w", err)
	}
	if r := cfg.Reachability; r != nil && r.Status != nil {
		if err := r.Status.Watch(h); err != nil {
			_ = h.Close()
			return nil, err
		}
	}
	return h, nil
}

// joinAddrs lists multiaddrs separated by commas.
func joinAddrs(addrs []multiaddr.Multiaddr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// Blocklist is a connection gater that refuses peers blocked until a time.
// Safe for concurrent use.
type Blocklist struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[peer.ID]time.Time
}

// NewBlocklist returns an empty blocklist reading the clock from now
// (time.Now when nil).
func NewBlocklist(now func() time.Time) *Blocklist {
	if now == nil {
		now = time.Now
	}
	return &Blocklist{now: now, m: make(map[peer.ID]time.Time)}
}

// Block refuses p until the given time.
func (b *Blocklist) Block(p peer.ID, until time.Time) {
	b.mu.Lock()
	if until.After(b.m[p]) {
		b.m[p] = until
	}
	b.mu.Unlock()
}

// IsBlocked reports whether p is blocked now.
func (b *Blocklist) IsBlocked(p peer.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := b.m[p]
	if !ok {
		return false
	}
	if !b.now().Before(until) {
		delete(b.m, p)
		return false
	}
	return true
}

// InterceptPeerDial refuses to dial blocked peers.
func (b *Blocklist) InterceptPeerDial(p peer.ID) bool { return !b.IsBlocked(p) }

// InterceptAddrDial refuses to dial blocked peers.
func (b *Blocklist) InterceptAddrDial(p peer.ID, _ multiaddr.Multiaddr) bool {
	return !b.IsBlocked(p)
}

// InterceptAccept accepts every incoming connection; the peer is known only
// once it is secured.
func (b *Blocklist) InterceptAccept(network.ConnMultiaddrs) bool { return true }

// InterceptSecured refuses secured connections of blocked peers.
func (b *Blocklist) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return !b.IsBlocked(p)
}

// InterceptUpgraded accepts every upgraded connection.
func (b *Blocklist) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
