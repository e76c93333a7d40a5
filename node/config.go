package node

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/creditnet"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/indexnet"
	"github.com/up-pool/up/indexwriter"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
)

// Config configures a node. Zero values take the defaults.
type Config struct {
	// DataDir holds the node's identity, certificate and store. Required.
	DataDir string
	// Listen are the multiaddrs to listen on. Default /ip4/0.0.0.0/tcp/4001
	// and /ip4/0.0.0.0/udp/4001/quic-v1.
	Listen []multiaddr.Multiaddr
	// Bootstrap are peers dialled at start, besides the known peers
	// remembered in the store.
	Bootstrap []peer.AddrInfo
	// HTTPAddr is the local HTTP API's address (/status, /metrics); empty
	// turns it off. Use a loopback address.
	HTTPAddr string
	// DHT configures kad-dht and lookups. Mode: server (the zero value, as
	// tests and the testnet on mocknet or loopback want), auto (`up node
	// run`'s default: a DHT client, in no routing table and holding no job
	// or index entry, until AutoNAT finds the node publicly reachable) or
	// client.
	DHT dht.Config
	// Pool configures the job pool (republish, expiry, timeouts).
	Pool pool.Config
	// Blob configures the blob store (per-project quotas, repair rounds).
	Blob blobnet.Config
	// Credit configures the credit receipt store (per-client bounds,
	// repair rounds).
	Credit creditnet.Config
	// Index configures the index server and region views.
	Index indexnet.Config
	// IndexWriter configures the writer that keeps this node's jobs listed.
	IndexWriter indexwriter.Config
	// Claim configures the claim service (T_claim, per-client limits).
	Claim claimnet.Config
	// HelloTimeout bounds the admission handshake. Default 10 s.
	HelloTimeout time.Duration
	// CRLReload is how often DataDir/crl.pem is re-read. Default 1 min.
	CRLReload time.Duration
	// MaxKnownPeers bounds the remembered peers dialled at start. Default 32.
	MaxKnownPeers int
	// JoinRetries is how many more times Start tries to join when no
	// bootstrap or remembered peer could be reached (a node restarted while
	// its peers still hold its old connection), 1 s apart and doubling.
	// Default 5 (about a minute); negative: no retry.
	JoinRetries int
	// JoinUntilStopped keeps Start trying to join until its context ends
	// (a volunteer's machine may start before its network), unless every
	// peer refuses the node's own certificate; JoinRetries is then unused.
	JoinUntilStopped bool
	// JoinBackoffMax is the longest wait between two tries to join; the
	// first is 1 s (or this, when less) and each doubles. Default 1 min.
	JoinBackoffMax time.Duration
	// PeerSaveInterval is how often newly admitted nodes are written to the
	// store's peer book (also written at close). Default 30 s.
	PeerSaveInterval time.Duration
	// StoreSyncInterval is how often the store's write-ahead log is synced
	// for the writes since the last sync: job replicas, claims and results
	// are replicated on r machines that repair each other, so a write waits
	// for the OS (safe against a crash of the node's process), not for its
	// own fsync; a power failure can take the last interval's writes.
	// Default 100 ms.
	StoreSyncInterval time.Duration
	// StoreSyncEachWrite makes every store write wait for its own fsync
	// instead (StoreSyncInterval is then unused).
	StoreSyncEachWrite bool
	// Now reads the clock: the node's and every service's (one overlay.Env
	// passed to each). Default time.Now.
	Now func() time.Time
	// Seed seeds the services' random choices (republish and rewrite
	// jitter, index selection, region points, balancing probes); each
	// mixes in the node's peer ID or certificate. Default 1.
	Seed uint64
	// Logger receives structured logs, the services' included. Default
	// slog.Default().
	Logger *slog.Logger
	// Host is an already built libp2p host (mocknet in tests) whose identity
	// must be the data directory's peer key; nil builds a TCP host.
	Host host.Host
	// NewHost, when set, builds the host for a new identity after a move
	// (mocknet in tests); nil builds a TCP host on Listen.
	NewHost func(key crypto.PrivKey) (host.Host, error)
	// Reachability configures the reachability services of the host the
	// node builds (not of Host or NewHost's); nil: overlay.NodeReachability
	// (AutoNAT, port mapping, relay service while public, hole punching).
	// The node adds auto-relay on its routing table's peers and its status.
	Reachability *overlay.Reachability
	// Balance configures load balancing by moving positions.
	Balance BalanceConfig
	// OnMove, when set, is told the old and new peer ID after each move.
	OnMove func(old, new peer.ID)
	// Bandwidth, when set, counts the bytes a TCP host sends and receives.
	Bandwidth metrics.Reporter
	// LibP2PMetrics exports libp2p's own metrics on /metrics; leave it off
	// when many nodes share a process, as libp2p's collectors are global.
	LibP2PMetrics bool
	// Version labels the up_build_info metric; empty: the module's version.
	Version string
	// SeriesStep is how often the node records a sample of its state
	// (jobs, index entries, load, moves, connections, request rates) for
	// GET /api/series, which keeps the last MaxSamples. Default 5 s.
	SeriesStep time.Duration
}

func (c *Config) applyDefaults() {
	if len(c.Listen) == 0 && c.Host == nil {
		c.Listen = []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/0.0.0.0/tcp/4001"), multiaddr.StringCast("/ip4/0.0.0.0/udp/4001/quic-v1")}
	}
	if c.HelloTimeout == 0 {
		c.HelloTimeout = 10 * time.Second
	}
	if c.CRLReload == 0 {
		c.CRLReload = time.Minute
	}
	if c.MaxKnownPeers == 0 {
		c.MaxKnownPeers = 32
	}
	if c.JoinRetries == 0 {
		c.JoinRetries = 5
	}
	if c.JoinBackoffMax == 0 {
		c.JoinBackoffMax = time.Minute
	}
	if c.StoreSyncInterval == 0 {
		c.StoreSyncInterval = 100 * time.Millisecond
	}
	if c.PeerSaveInterval == 0 {
		c.PeerSaveInterval = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.SeriesStep == 0 {
		c.SeriesStep = DefaultSeriesStep
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports the first missing or bad setting of c (after its
// defaults), naming the field, in one line. The services' configs are
// validated by their constructors.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("node config: no data directory (DataDir)")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"HelloTimeout", c.HelloTimeout}, {"CRLReload", c.CRLReload}, {"JoinBackoffMax", c.JoinBackoffMax},
		{"PeerSaveInterval", c.PeerSaveInterval}, {"StoreSyncInterval", c.StoreSyncInterval}, {"SeriesStep", c.SeriesStep},
	} {
		if d.v < 0 {
			return fmt.Errorf("node config: %s %s is negative", d.name, d.v)
		}
	}
	if c.MaxKnownPeers < 0 {
		return fmt.Errorf("node config: MaxKnownPeers %d is negative", c.MaxKnownPeers)
	}
	return nil
}
