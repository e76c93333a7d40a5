package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/blobnet"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/creditnet"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/indexnet"
	"github.com/up-pool/up/indexwriter"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/pool"
)

// instance is the node's network presence at one position: host,
// admission, kad-dht and every protocol service. A move replaces it with
// one at the new position; the store and the identity files outlive it.
type instance struct {
	host   host.Host
	ep     *overlay.Endpoint
	dht    *dht.DHT
	pool   *pool.Pool
	blobs  *blobnet.Service
	credit *creditnet.Service
	index  *indexnet.Server
	writer *indexwriter.Writer
	finder *indexclient.Client
	claims *claimnet.Service
	reach  *overlay.ReachStatus
	// relayDHT is dht once started, for auto-relay's peer source, which
	// the host is built with before the DHT exists.
	relayDHT atomic.Pointer[dht.DHT]
	// relayACL admits to the relay service only what ep admits; bound
	// once ep exists (the host is built first).
	relayACL overlay.AdmittedRelayACL
}

// openInstance starts the network stack under the identity's current
// peer key. h, when set, is a host already built for that key.
func (n *Node) openInstance(h host.Host) (_ *instance, err error) {
	cfg, id := n.cfg, n.id
	in := &instance{host: h}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	metrics := overlay.NewMetrics()
	blocklist := overlay.NewBlocklist(cfg.Now)
	if in.host == nil {
		if in.host, err = n.newHost(in, metrics, blocklist); err != nil {
			return nil, err
		}
	} else {
		// A host built by the caller (mocknet): its reachability is as
		// far as its events tell.
		in.reach = overlay.NewReachStatus(n.log, cfg.Now, false, network.ReachabilityUnknown)
		if err = in.reach.Watch(in.host); err != nil {
			return nil, err
		}
	}
	if in.host.ID() != id.PeerID {
		return nil, fmt.Errorf("host identity %s is not the data directory's %s", in.host.ID(), id.PeerID)
	}
	if in.ep, err = n.newEndpoint(in.host, metrics, blocklist); err != nil {
		return nil, err
	}
	in.relayACL.Bind(in.ep.Admission())
	if in.dht, err = dht.New(dht.Deps{Endpoint: in.ep, Env: n.env}, cfg.DHT); err != nil {
		return nil, err
	}
	in.relayDHT.Store(in.dht)
	claimDeps := claimnet.Deps{Endpoint: in.ep, DHT: in.dht, Identity: id, Env: n.env}
	poolCfg := cfg.Pool
	if poolCfg.ClaimCheck == nil {
		// Claims and releases merge from other nodes only with their proof.
		pc, err := claimnet.NewProofChecker(claimDeps, cfg.Claim)
		if err != nil {
			return nil, err
		}
		poolCfg.ClaimCheck = pc.Check
	}
	// Receipts for the jobs this node stores, which projects count.
	account := &pool.Account{Cert: id.Cert.Raw, Key: id.Key}
	if in.pool, err = pool.New(pool.Deps{Endpoint: in.ep, DHT: in.dht, Store: n.store, GoneStore: n.goneStore, Account: account, Env: n.env}, poolCfg); err != nil {
		return nil, err
	}
	if in.blobs, err = blobnet.New(blobnet.Deps{Endpoint: in.ep, DHT: in.dht, Store: n.store, Env: n.env}, cfg.Blob); err != nil {
		return nil, err
	}
	if in.credit, err = creditnet.New(creditnet.Deps{Endpoint: in.ep, DHT: in.dht, Store: n.store, Identity: id, Env: n.env}, cfg.Credit); err != nil {
		return nil, err
	}
	if err = n.openIndex(in); err != nil {
		return nil, err
	}
	claimDeps.Pool = in.pool
	if in.claims, err = claimnet.New(claimDeps, cfg.Claim); err != nil {
		return nil, err
	}
	in.claims.OnFreed(in.writer.Unquarantine) // a failed claim does not idle the job for the quarantine
	n.rememberPeers(in)
	n.lb.Serve(in.balance())
	return in, nil
}

// newHost is the node's libp2p host: Config.NewHost's, or overlay's with
// the node's listen addresses, blocklist, bandwidth limit and
// reachability services, auto-relay offering the routing table's peers.
func (n *Node) newHost(in *instance, metrics *overlay.Metrics, blocklist *overlay.Blocklist) (host.Host, error) {
	cfg := n.cfg
	if cfg.NewHost != nil {
		h, err := cfg.NewHost(n.id.PeerKey)
		if err != nil {
			return nil, err
		}
		in.reach = overlay.NewReachStatus(n.log, cfg.Now, false, network.ReachabilityUnknown)
		if err := in.reach.Watch(h); err != nil {
			_ = h.Close()
			return nil, err
		}
		return h, nil
	}
	r := overlay.NodeReachability()
	if cfg.Reachability != nil {
		r = *cfg.Reachability
	}
	in.reach = overlay.NewReachStatus(n.log, cfg.Now, r.AutoNAT, r.Force)
	r.Status = in.reach
	if r.RelayPeers == nil {
		r.RelayPeers = overlay.RelayPeerSource(func() []peer.AddrInfo { return relayCandidates(in) })
	}
	if r.RelayService && r.RelayACL == nil {
		in.relayACL.Wait = cfg.HelloTimeout
		r.RelayACL = &in.relayACL
	}
	hc := overlay.HostConfig{Key: n.id.PeerKey, Listen: cfg.Listen, Blocklist: blocklist, Bandwidth: cfg.Bandwidth, Reachability: &r}
	if cfg.LibP2PMetrics {
		hc.Registerer = metrics.Registry
	}
	return overlay.NewHost(hc)
}

// relayCandidates are the routing table's peers with their addresses:
// nodes in server mode, which serve a relay while publicly reachable
// (auto-relay skips those that do not speak the relay protocol).
func relayCandidates(in *instance) []peer.AddrInfo {
	d := in.relayDHT.Load()
	if d == nil {
		return nil
	}
	ps := d.RoutingTablePeers()
	out := make([]peer.AddrInfo, 0, len(ps))
	for _, p := range ps {
		if ai := in.host.Peerstore().PeerInfo(p); len(ai.Addrs) > 0 {
			out = append(out, ai)
		}
	}
	return out
}

// newEndpoint is the node's overlay endpoint on h, admitting peers by the
// node's CA and saving each newer revocation list a peer sends.
func (n *Node) newEndpoint(h host.Host, metrics *overlay.Metrics, blocklist *overlay.Blocklist) (*overlay.Endpoint, error) {
	cfg, id, log := n.cfg, n.id, n.log
	return overlay.New(h, overlay.Config{
		Verifier:     id.NewVerifier(),
		Cert:         id.Cert.Raw,
		Position:     id.Position.Marshal(),
		HelloTimeout: cfg.HelloTimeout,
		Now:          cfg.Now,
		Logger:       log,
		Metrics:      metrics,
		Blocklist:    blocklist,
		// Another node's moves: at most one per cool-down (less a minute of
		// clock skew).
		MinMoveInterval: n.peerMoveInterval(),
		OnCRL: func(rl *certs.RevocationList) {
			if err := id.SaveCRL(rl); err != nil {
				log.Error("save revocation list", "err", err)
			}
		},
	})
}

// peerMoveInterval is the least time between two positions of another
// node this node accepts: its own move interval less a minute of clock
// skew, none when the move-interval check is off.
func (n *Node) peerMoveInterval() time.Duration {
	p := n.lb.Config().Params
	if p.NoMoveInterval {
		return 0
	}
	return max(time.Duration(p.MinMoveInterval)*time.Millisecond-time.Minute, 0)
}

// openIndex starts the instance's index server, writer and finder.
func (n *Node) openIndex(in *instance) (err error) {
	ic := n.cfg.Index
	if in.index, err = indexnet.New(indexnet.Deps{Endpoint: in.ep, Env: n.env}, ic.Server); err != nil {
		return err
	}
	d, hst := in.dht, in.host
	in.index.SetView(func(pos keyspace.Pos) peer.ID {
		// Redirect only to a live node: probe one we are not connected to
		// (a dead one stays in routing tables for a while).
		for _, p := range d.NearestLocal(pos, 4) {
			if p == hst.ID() {
				return p
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			alive := d.IsAlive(ctx, p)
			cancel()
			if alive {
				return p
			}
		}
		return ""
	})
	// The region points' seed is the node's seed + 1, apart from the
	// writer's jitter (the agents' is Index.Seed + 3).
	regions := indexclient.NewRegions(in.dht, ic.RegionBits, ic.RegionTTL, keyspace.Seed([]byte(n.id.PeerID), n.env.Seed+1), n.env.Now)
	if in.writer, err = indexwriter.New(indexwriter.Deps{Pool: in.pool, DHT: in.dht, Regions: regions, Local: in.index, Env: n.env}, n.cfg.IndexWriter); err != nil {
		return err
	}
	in.finder = indexclient.NewClient(in.dht, regions, in.index, ic.FindTries)
	return nil
}

// close stops the instance's services, kad-dht and host (not the store).
func (in *instance) close() error {
	var errs []error
	if in.reach != nil {
		in.reach.Close()
	}
	if in.claims != nil {
		errs = append(errs, in.claims.Close())
	}
	if in.writer != nil {
		errs = append(errs, in.writer.Close())
	}
	if in.index != nil {
		errs = append(errs, in.index.Close())
	}
	if in.pool != nil {
		errs = append(errs, in.pool.Close())
	}
	if in.credit != nil {
		errs = append(errs, in.credit.Close())
	}
	if in.blobs != nil {
		errs = append(errs, in.blobs.Close())
	}
	if in.dht != nil {
		errs = append(errs, in.dht.Close())
	}
	if in.ep != nil {
		errs = append(errs, in.ep.Close())
	}
	if in.host != nil {
		errs = append(errs, in.host.Close())
	}
	return errors.Join(errs...)
}
