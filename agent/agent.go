// Package agent owns the overlay presence of a party that is not a node —
// a project workstation or a worker client: its identity, libp2p host,
// admission (it talks only to certified nodes) and a client-mode kad-dht
// for lookups. The project and client packages build on it.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
)

// Config configures an Agent. Zero values take the defaults.
type Config struct {
	// Identity is the party's loaded data directory. Required.
	Identity *keystore.Identity
	// Host is an already built host (mocknet in tests), which the agent
	// then owns and closes; nil builds a TCP host listening on Listen.
	Host host.Host
	// Listen are multiaddrs to listen on; none: dial only.
	Listen []multiaddr.Multiaddr
	// DHT configures lookups; Mode is forced to client.
	DHT dht.Config
	// Index configures region views and Find (only nodes hold index
	// entries: an agent carries no index server).
	Index indexclient.Config
	// HelloTimeout bounds admission handshakes. Default 10 s.
	HelloTimeout time.Duration
	// Now reads the clock. Default time.Now.
	Now func() time.Time
	// Logger receives structured logs. Default slog.Default().
	Logger *slog.Logger
}

// Agent is a non-node party on the overlay.
type Agent struct {
	id   *keystore.Identity
	host host.Host
	ep   *overlay.Endpoint
	dht  *dht.DHT
	idx  *indexclient.Client
	log  *slog.Logger
	now  func() time.Time
	once sync.Once
	err  error
}

// Open starts the party's host, admission and client-mode DHT.
func Open(cfg Config) (*Agent, error) {
	if cfg.Identity == nil {
		return nil, errors.New("agent: no identity")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	id := cfg.Identity
	a := &Agent{id: id, log: cfg.Logger.With(string(id.Role), id.Name), now: cfg.Now}
	blocklist := overlay.NewBlocklist(cfg.Now)
	a.host = cfg.Host
	if a.host == nil {
		h, err := overlay.NewHost(overlay.HostConfig{Key: id.PeerKey, Listen: cfg.Listen, Blocklist: blocklist})
		if err != nil {
			return nil, err
		}
		a.host = h
	} else if a.host.ID() != id.PeerID {
		return nil, fmt.Errorf("host identity %s is not the data directory's %s", a.host.ID(), id.PeerID)
	}
	var err error
	a.ep, err = overlay.New(a.host, overlay.Config{
		Verifier:     id.NewVerifier(),
		Cert:         id.Cert.Raw,
		Position:     id.Position.Marshal(),
		Accept:       []certs.Role{certs.RoleNode},
		HelloTimeout: cfg.HelloTimeout,
		Now:          cfg.Now,
		Logger:       a.log,
		Blocklist:    blocklist,
		OnCRL: func(rl *certs.RevocationList) {
			if err := id.SaveCRL(rl); err != nil {
				a.log.Warn("save revocation list", "err", err)
			}
		},
	})
	if err != nil {
		a.closeHost()
		return nil, err
	}
	dcfg := cfg.DHT
	dcfg.Mode = dht.ModeClient
	if a.dht, err = dht.New(dht.Deps{Endpoint: a.ep, Env: overlay.Env{Now: cfg.Now, Logger: a.log}}, dcfg); err != nil {
		a.ep.Close()
		a.closeHost()
		return nil, err
	}
	regions := indexclient.NewRegions(a.dht, cfg.Index.RegionBits, cfg.Index.RegionTTL, keyspace.Seed([]byte(id.PeerID), cfg.Index.Seed+3), cfg.Now)
	a.idx = indexclient.NewClient(a.dht, regions, nil, cfg.Index.FindTries)
	return a, nil
}

func (a *Agent) closeHost() { a.host.Close() }

// Join connects to nodes and waits until they are admitted (they enter the
// client-mode routing table as they are). It fails only when none answers;
// with overlay.ErrRefusedUs when every one refused this party's own
// certificate.
func (a *Agent) Join(ctx context.Context, nodes []peer.AddrInfo) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	ok := 0
	for _, ai := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := a.ep.Join(ctx, ai) // follows a node that moved since ai was written
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("join via %s: %w", ai.ID, err))
			} else {
				ok++
			}
		}()
	}
	wg.Wait()
	if ok == 0 && len(nodes) > 0 {
		return fmt.Errorf("join: %w", overlay.JoinError(errs))
	}
	return nil
}

// Close stops the party. Safe to call more than once.
func (a *Agent) Close() error {
	a.once.Do(func() {
		a.err = errors.Join(a.dht.Close(), a.ep.Close(), a.host.Close())
	})
	return a.err
}

// ID is the party's peer ID.
func (a *Agent) ID() peer.ID { return a.host.ID() }

// Identity is the party's data directory.
func (a *Agent) Identity() *keystore.Identity { return a.id }

// Endpoint is the party's overlay endpoint.
func (a *Agent) Endpoint() *overlay.Endpoint { return a.ep }

// DHT is the party's client-mode DHT.
func (a *Agent) DHT() *dht.DHT { return a.dht }

// Index queries the index.
func (a *Agent) Index() *indexclient.Client { return a.idx }

// Host is the party's libp2p host.
func (a *Agent) Host() host.Host { return a.host }

// Logger is the party's logger.
func (a *Agent) Logger() *slog.Logger { return a.log }

// Now reads the party's clock.
func (a *Agent) Now() time.Time { return a.now() }
