package testnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/cadir"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/creditnet"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/grind"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/indexnet"
	"github.com/up-pool/up/indexwriter"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/wire"
)

// Transport selects how the nodes talk.
type Transport int

// Transports.
const (
	// Mocknet runs the libp2p stack over in-memory links that can be cut.
	Mocknet Transport = iota
	// TCP runs the full stack (TCP, Noise, yamux) on 127.0.0.1.
	TCP
)

// Options configures a Network. Zero values take the defaults.
type Options struct {
	// Nodes is the number of nodes. Default 8.
	Nodes int
	// Transport: Mocknet (default) or TCP.
	Transport Transport
	// Dir holds the CA's directory (ca/, as `up testnet init` makes it)
	// and the parties' data directories. Required.
	Dir string
	// Seed makes identities, and so positions, replay. Default 1.
	Seed uint64
	// DHT configures each node's kad-dht; auto-refresh is off unless
	// AutoRefresh is set.
	DHT dht.Config
	// AutoRefresh keeps kad-dht's periodic routing-table refresh on.
	AutoRefresh bool
	// SlowBootstrap joins every node through node 0 with real lookups
	// instead of filling routing tables directly.
	SlowBootstrap bool
	// HelloTimeout bounds admission handshakes. Default 20 s.
	HelloTimeout time.Duration
	// Now reads the clock. Default time.Now.
	Now func() time.Time
	// Logger receives the nodes' logs. Default: discarded.
	Logger *slog.Logger
	// Pool configures each node's job pool; its background rounds are off
	// unless PoolLoops is set, so tests drive rounds with RepublishAll.
	Pool pool.Config
	// PoolLoops keeps the pools' background republish and expiry on, and
	// the index writers' and servers' loops and the blob repair rounds.
	PoolLoops bool
	// Blob configures each node's blob store; its repair rounds are off
	// unless PoolLoops is set, so tests drive them with RepairAll.
	Blob blobnet.Config
	// Credit configures each node's credit receipt store; its repair
	// rounds are off unless PoolLoops is set.
	Credit creditnet.Config
	// Index configures each node's index (and the agents' region views).
	Index indexnet.Config
	// IndexWriter configures each node's index entry writer.
	IndexWriter indexwriter.Config
	// Balance configures each node's load balancing; its probes are off
	// unless Interval is set, so tests drive rounds with BalanceAll.
	Balance node.BalanceConfig
	// Configure, when set, adjusts each node's config before it opens.
	Configure func(i int, cfg *node.Config)
	// Adversary makes some nodes Byzantine and some clocks wrong.
	Adversary
}

// Network is a running in-process network.
type Network struct {
	opts   Options
	CA     *certs.Authority
	ca     *cadir.CA // CA, in Dir/ca
	rng    *rand.Rand
	mn     mocknet.Mocknet
	mu     sync.Mutex
	nodes  []*node.Node // nil where killed
	addrs  []multiaddr.Multiaddr
	dirs   []string
	extra  int              // hosts added by NewHost
	killed map[peer.ID]bool // mocknet peers cut off by Kill
	bw     []*metrics.BandwidthCounter
	adv    *adversary // nil: every node honest, one clock
	// offsets are the nodes' clock offsets set by SetClockOffset, in ns,
	// added to whatever clock each node has.
	offsets []atomic.Int64
}

// seededReader is an io.Reader of replayable bytes.
type seededReader struct{ r *rand.ChaCha8 }

func (s seededReader) Read(p []byte) (int, error) { return s.r.Read(p) }

func newSeeded(seed [32]byte) seededReader { return seededReader{rand.NewChaCha8(seed)} }

// Start creates the CA and the nodes' identities under opts.Dir, starts
// every node and bootstraps the network.
func Start(ctx context.Context, opts Options) (*Network, error) {
	if opts.Dir == "" {
		return nil, errors.New("testnet: no directory")
	}
	opts.defaults()
	seed := seedBytes(opts.Seed)
	if err := opts.ValidateAdversary(); err != nil {
		return nil, err
	}
	n := &Network{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))}
	if opts.Byzantine > 0 || opts.Skewed > 0 || opts.Jump > 0 {
		n.adv = chooseAdversary(opts)
	}
	randSrc := newSeeded(seed)
	ca, err := cadir.Create(filepath.Join(opts.Dir, "ca"), "testnet CA", opts.Now().Add(-time.Hour), 10*365*24*time.Hour, randSrc)
	if err != nil {
		return nil, err
	}
	n.ca, n.CA = ca, ca.Authority
	if opts.Transport == Mocknet {
		n.mn = mocknet.New()
	}
	n.nodes = make([]*node.Node, opts.Nodes)
	n.addrs = make([]multiaddr.Multiaddr, opts.Nodes)
	n.dirs = make([]string, opts.Nodes)
	n.offsets = make([]atomic.Int64, opts.Nodes)
	n.bw = make([]*metrics.BandwidthCounter, opts.Nodes)
	for i := range n.bw {
		n.bw[i] = metrics.NewBandwidthCounter()
	}
	if err := n.openAll(ctx, randSrc); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// defaults fills the zero options, and turns off the background loops
// and kad-dht's refresh unless asked for.
func (opts *Options) defaults() {
	if opts.Nodes == 0 {
		opts.Nodes = 8
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	// Generous timeouts: a loaded machine (the race detector, parallel
	// packages) must not turn slow peers into dead ones. Dead mocknet peers
	// fail at once whatever the timeout.
	if opts.HelloTimeout == 0 {
		opts.HelloTimeout = 20 * time.Second
	}
	if opts.DHT.ProbeTimeout == 0 {
		opts.DHT.ProbeTimeout = 15 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Balance.Interval == 0 {
		opts.Balance.Off = true // no automatic balancing unless a test asks for a period
	}
	if !opts.PoolLoops {
		opts.Pool.DisableLoops = true
		opts.Blob.DisableLoops = true
		opts.Credit.DisableLoops = true
		opts.Index.Server.DisableLoops = true
		opts.IndexWriter.DisableLoops = true
	}
	if !opts.AutoRefresh {
		opts.DHT.DisableAutoRefresh = true
	}
}

// seedBytes is a 32-byte seed holding seed in its first 8 bytes, little
// endian.
func seedBytes(seed uint64) [32]byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return s
}

// openAll creates and certifies every node's data directory (identities
// from randSrc, in order), opens the nodes, links them all on mocknet and
// bootstraps the network. The caller closes the network on an error.
func (n *Network) openAll(ctx context.Context, randSrc io.Reader) error {
	for i := range n.opts.Nodes {
		dir := filepath.Join(n.opts.Dir, fmt.Sprintf("node%03d", i))
		if _, err := n.initParty(dir, certs.RoleNode, fmt.Sprintf("node%03d", i), randSrc); err != nil {
			return err
		}
		n.dirs[i] = dir
		if n.opts.Transport == Mocknet {
			n.addrs[i] = multiaddr.StringCast(fmt.Sprintf("/ip4/10.%d.%d.%d/tcp/4001", i>>16&255, i>>8&255, i&255))
		} else {
			n.addrs[i] = multiaddr.StringCast("/ip4/127.0.0.1/tcp/0")
		}
		if err := n.open(i); err != nil {
			return err
		}
	}
	if n.mn != nil {
		if err := n.mn.LinkAll(); err != nil {
			return err
		}
	}
	return n.bootstrap(ctx)
}

// initParty creates and certifies a party's data directory.
func (n *Network) initParty(dir string, role certs.Role, name string, rand io.Reader) (*keystore.Identity, error) {
	return n.ca.Certify(cadir.Party{Dir: dir, Role: role, Name: name, Now: n.opts.Now(), Rand: rand})
}

// NewParty creates a certified data directory for a client, project or
// extra node under the network's directory and returns it loaded.
func (n *Network) NewParty(role certs.Role, name string) (*keystore.Identity, error) {
	dir := filepath.Join(n.opts.Dir, string(role)+"-"+name)
	n.mu.Lock()
	seed := n.rng.Uint64()
	n.mu.Unlock()
	return n.initParty(dir, role, name, newSeeded(seedBytes(seed)))
}

// open starts node i from its data directory.
func (n *Network) open(i int) error {
	cfg := n.nodeConfig(i)
	if n.mn != nil {
		if err := n.mockHost(i, &cfg); err != nil {
			return err
		}
	} else {
		cfg.Listen = []multiaddr.Multiaddr{n.addrs[i]}
		cfg.Bandwidth = n.bw[i]
	}
	if n.opts.Configure != nil {
		n.opts.Configure(i, &cfg)
	}
	nd, err := node.Open(cfg)
	if err != nil {
		if cfg.Host != nil {
			cfg.Host.Close()
		}
		return fmt.Errorf("node %d: %w", i, err)
	}
	if err := nd.Start(context.Background()); err != nil {
		nd.Close()
		return fmt.Errorf("node %d: %w", i, err)
	}
	if n.opts.Transport == TCP {
		n.keepPort(i, nd)
	}
	n.mu.Lock()
	n.nodes[i] = nd
	n.mu.Unlock()
	n.corrupt(i, nd, cfg.Now)
	return nil
}

// nodeConfig is node i's config from the network's options: its clock
// (the adversary's, if it skews node i) and a seeded grinder, unless the
// options name one.
func (n *Network) nodeConfig(i int) node.Config {
	cfg := node.Config{
		DataDir:      n.dirs[i],
		DHT:          n.opts.DHT,
		Pool:         n.opts.Pool,
		Blob:         n.opts.Blob,
		Credit:       n.opts.Credit,
		Balance:      n.opts.Balance,
		Index:        n.opts.Index,
		IndexWriter:  n.opts.IndexWriter,
		HelloTimeout: n.opts.HelloTimeout,
		Now:          n.opts.Now,
		Logger:       n.opts.Logger,
	}
	if n.adv != nil {
		cfg.Now = n.adv.clock(i, n.opts.Now)
	}
	base, off := cfg.Now, &n.offsets[i]
	cfg.Now = func() time.Time { return base().Add(time.Duration(off.Load())) }
	if cfg.Balance.Grinder == nil {
		// One worker on a seeded stream: a move lands where it landed
		// last time the run was played.
		var s [32]byte
		for j := range 8 {
			s[j] = byte(n.opts.Seed >> (8 * j))
			s[8+j] = byte(uint64(i) >> (8 * j))
		}
		s[16] = 'g'
		cfg.Balance.Grinder = grind.Secp256k1{Workers: 1, Rand: newSeeded(s)}
	}
	return cfg
}

// mockHost adds node i to the mocknet as a peer, links it to every live
// peer and sets cfg's host to it, with the host a move starts and the
// isolation of the identity a move leaves.
func (n *Network) mockHost(i int, cfg *node.Config) error {
	id, err := keystore.Load(n.dirs[i], certs.RoleNode, n.opts.Now())
	if err != nil {
		return err
	}
	h, err := n.mn.AddPeer(id.PeerKey, n.addrs[i])
	if err != nil {
		return fmt.Errorf("mocknet peer %d: %w", i, err)
	}
	// Link to every live peer now (running nodes, projects and
	// clients), so a restarted node can rejoin in Start and parties
	// started before it can reach it; a new network links all at
	// once after opening.
	n.mu.Lock()
	delete(n.killed, h.ID())
	killed := maps.Clone(n.killed)
	n.mu.Unlock()
	for _, other := range n.mn.Peers() {
		if other == h.ID() || killed[other] {
			continue
		}
		if _, err := n.mn.LinkPeers(h.ID(), other); err != nil {
			h.Close()
			return err
		}
	}
	cfg.Host = h
	cfg.NewHost = n.moverHost
	cfg.OnMove = func(old, _ peer.ID) { n.isolate(old) } // the old identity is gone
	return nil
}

// keepPort keeps the loopback address node i listens on, for a restart
// to reuse its port.
func (n *Network) keepPort(i int, nd *node.Node) {
	for _, a := range nd.AddrInfo().Addrs {
		if s, _ := a.ValueForProtocol(multiaddr.P_IP4); s == "127.0.0.1" {
			n.addrs[i] = a
			break
		}
	}
}

type wireHello = wire.Hello

func helloOf(nd *node.Node) *wire.Hello { return nd.Endpoint().Hello() }

func sortPeers(target keyspace.Pos, ids []peer.ID) { dht.SortPeers(target, ids) }

// BytesSent is the total the nodes have sent over TCP (0 on mocknet).
func (n *Network) BytesSent() int64 {
	var sum int64
	for _, c := range n.bw {
		sum += c.GetBandwidthTotals().TotalOut
	}
	return sum
}
