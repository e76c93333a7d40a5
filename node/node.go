package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/balancenet"
	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/creditnet"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/indexnet"
	"github.com/up-pool/up/indexwriter"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/store"
)

// Node is a running volunteer node. Its network presence (instance) is
// replaced when the node moves to a new position; the accessors return
// the current one.
type Node struct {
	cfg   Config
	id    *keystore.Identity
	log   *slog.Logger
	env   overlay.Env // every service's clock, seed and logger
	store *store.Store
	// goneStore holds the gone records of deleted jobs (pool.Deps.GoneStore).
	goneStore *store.Store
	lock      *keystore.Lock // the data directory's, held until Close
	started   time.Time
	peers     peerBook
	lb        *balancenet.Service
	series    *Sampler                 // GET /api/series
	revs      atomic.Pointer[revCache] // /status's revocations of the current list

	mu   sync.RWMutex
	inst *instance

	httpSrv *http.Server
	httpLn  net.Listener

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	running    atomic.Bool // Start succeeded
	freshStore bool        // Open created the store directory

	closeOnce sync.Once
	closeErr  error
}

// Open loads the node's identity from cfg.DataDir and starts its host,
// admission, kad-dht and store. It dials nobody yet: call Start.
func Open(cfg Config) (_ *Node, err error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	id, err := keystore.Load(cfg.DataDir, certs.RoleNode, cfg.Now())
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("node", id.Name)
	n := &Node{cfg: cfg, id: id, log: log, started: cfg.Now(), env: overlay.Env{Now: cfg.Now, Seed: cfg.Seed, Logger: log}}
	n.series = NewSampler(cfg.SeriesStep, MaxSamples)
	if n.lb, err = n.newBalance(); err != nil {
		return nil, err
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	// The lock comes first: a directory in use is left alone, its store
	// included.
	if n.lock, err = keystore.LockDir(cfg.DataDir); err != nil {
		return nil, err
	}
	if _, serr := os.Stat(id.Paths.Store()); errors.Is(serr, fs.ErrNotExist) {
		n.freshStore = true
	}
	defer func() {
		if err != nil {
			_ = n.Abandon() // the cause is err; closing what half-opened adds nothing
		}
	}()
	so := store.Options{SyncInterval: cfg.StoreSyncInterval}
	if cfg.StoreSyncEachWrite {
		so.SyncInterval = 0 // the store's zero: each write waits for its fsync
	}
	if n.store, err = store.OpenWith(id.Paths.Store(), so); err != nil {
		return nil, err
	}
	if n.goneStore, err = store.OpenWith(id.Paths.GoneStore(), so); err != nil {
		return nil, err
	}
	in, err := n.openInstance(cfg.Host)
	if err != nil {
		return nil, err
	}
	n.inst = in
	return n, nil
}

// cur is the current instance.
func (n *Node) cur() *instance {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.inst
}

// Start serves the HTTP API, dials the bootstrap and remembered peers,
// refreshes the routing table, catches the jobs it kept up with their
// replicas (pool.CatchUp) and starts the node's background loops.
func (n *Node) Start(ctx context.Context) error {
	if n.cfg.HTTPAddr != "" {
		if err := n.serveHTTP(); err != nil {
			return err
		}
	}
	n.goLoop(n.reloadCRLLoop)
	n.goLoop(n.savePeersLoop)
	n.goLoop(func() { n.lb.Run(n.ctx) })
	known := n.knownPeers(n.cfg.MaxKnownPeers)
	peers := append(append([]peer.AddrInfo(nil), n.cfg.Bootstrap...), known...)
	if len(peers) == 0 {
		n.log.Warn("no bootstrap and no remembered peers: this node is alone until other nodes join through it")
	}
	if len(peers) > 0 {
		tries := max(n.cfg.JoinRetries, 0) // negative: no retry
		if n.cfg.JoinUntilStopped {
			tries = -1 // until ctx ends
		}
		if err := overlay.RetryJoin(ctx, n.log, time.Second, n.cfg.JoinBackoffMax, tries, func(ctx context.Context) error {
			return n.join(ctx, peers, len(known) > 0)
		}); err != nil {
			return err
		}
	}
	in := n.cur()
	// A node restarted with jobs exchanges their states with its fellow
	// replicas before its index writer lists any (pool.CatchUp).
	if in.pool != nil {
		if st := in.pool.CatchUp(ctx); st.Held > 0 {
			n.log.Info("caught up with the replicas of the jobs kept", "held", st.Held, "merged", st.Merged,
				"failed", st.Failed, "elapsed", st.Elapsed)
		}
	}
	n.Sample() // the series' first sample, whose request rates are unknown
	n.goLoop(n.sampleLoop)
	n.running.Store(true)
	n.log.Info("node started", "peer", n.ID(), "position", in.dht.Self().Short(),
		"addrs", in.host.Addrs(), "routing_table", in.dht.RoutingTableSize())
	return nil
}

func (n *Node) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// reloadCRLLoop re-reads crl.pem so an operator can drop in a new list.
func (n *Node) reloadCRLLoop() {
	t := time.NewTicker(n.cfg.CRLReload)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			n.ReloadCRL()
		}
	}
}

// ReloadCRL reads the data directory's crl.pem and adopts it if newer.
func (n *Node) ReloadCRL() {
	b, err := os.ReadFile(n.id.Paths.CRL())
	if err != nil {
		return
	}
	rl, err := certs.ParseRevocationList(b, n.id.CA)
	if err != nil {
		n.log.Warn("revocation list file refused", "path", n.id.Paths.CRL(), "err", err)
		return
	}
	n.cur().ep.AdoptCRL(rl)
}

// Close stops the node: HTTP API, loops, kad-dht, host and store, in that
// order. Safe to call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.cancel()
		n.lb.Close() // the balancing in the background ends before the instance closes
		var errs []error
		if n.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			errs = append(errs, n.httpSrv.Shutdown(ctx))
			cancel()
		}
		n.wg.Wait()
		n.mu.Lock()
		in := n.inst
		n.mu.Unlock()
		if in != nil {
			if n.store != nil {
				n.flushPeers()
			}
			errs = append(errs, in.close())
		}
		if n.store != nil {
			errs = append(errs, n.store.Close())
		}
		if n.goneStore != nil {
			errs = append(errs, n.goneStore.Close())
		}
		n.lock.Unlock()
		n.closeErr = errors.Join(errs...)
		if n.running.Load() {
			n.log.Info("node stopped")
		}
	})
	return n.closeErr
}

// Abandon closes a node that failed to open or start and, when this Open
// created the store directory, removes it again, so a failed first start
// leaves the data directory as 'up node init' made it.
func (n *Node) Abandon() error {
	err := n.Close()
	if n.freshStore && !n.running.Load() {
		for _, dir := range []string{n.id.Paths.Store(), n.id.Paths.GoneStore()} {
			if rerr := os.RemoveAll(dir); rerr != nil {
				err = errors.Join(err, fmt.Errorf("remove the new store %s: %w", dir, rerr))
			}
		}
	}
	return err
}

// ID is the node's current peer ID.
func (n *Node) ID() peer.ID { return n.cur().host.ID() }

// Name is the node's certificate name.
func (n *Node) Name() string { return n.id.Name }

// AddrInfo is the node's peer ID and listen addresses.
func (n *Node) AddrInfo() peer.AddrInfo {
	h := n.cur().host
	return peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()}
}

// Addrs are the node's full multiaddrs, /p2p/ included.
func (n *Node) Addrs() []multiaddr.Multiaddr {
	ai := n.AddrInfo()
	addrs, _ := peer.AddrInfoToP2pAddrs(&ai)
	return addrs
}

// Endpoint is the node's overlay endpoint.
func (n *Node) Endpoint() *overlay.Endpoint { return n.cur().ep }

// DHT is the node's kad-dht and keyspace services.
func (n *Node) DHT() *dht.DHT { return n.cur().dht }

// Pool is the node's share of the job pool.
func (n *Node) Pool() *pool.Pool { return n.cur().pool }

// Blobs is the node's blob store.
func (n *Node) Blobs() *blobnet.Service { return n.cur().blobs }

// Credit is the node's credit receipt store.
func (n *Node) Credit() *creditnet.Service { return n.cur().credit }

// Index is the node's index server.
func (n *Node) Index() *indexnet.Server { return n.cur().index }

// Writer keeps the index entries of the node's jobs.
func (n *Node) Writer() *indexwriter.Writer { return n.cur().writer }

// Finder queries the index.
func (n *Node) Finder() *indexclient.Client { return n.cur().finder }

// Claims is the node's claim service.
func (n *Node) Claims() *claimnet.Service { return n.cur().claims }

// Store is the node's on-disk store.
func (n *Node) Store() *store.Store { return n.store }

// Identity is the node's loaded data directory.
func (n *Node) Identity() *keystore.Identity { return n.id }

// HTTPAddr is the bound address of the HTTP API, empty when off.
func (n *Node) HTTPAddr() string {
	if n.httpLn == nil {
		return ""
	}
	return n.httpLn.Addr().String()
}
