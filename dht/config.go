package dht

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/overlay"
)

// Mode says whether this party serves the DHT (nodes) or only queries it
// (clients and projects).
type Mode int

// Modes. The zero value is server, as tests and the testnet (mocknet,
// loopback) want; `up node run` defaults to auto.
const (
	ModeServer Mode = iota
	ModeClient
	// ModeAuto follows the host's reachability (kad-dht's ModeAuto on
	// AutoNAT's events): a client while the network cannot dial the node
	// or it does not know yet, a server once it is publicly reachable
	// (a public address, a port mapping or a forwarded port).
	ModeAuto
)

// String names the mode as the --dht-mode flag does.
func (m Mode) String() string {
	switch m {
	case ModeServer:
		return "server"
	case ModeClient:
		return "client"
	case ModeAuto:
		return "auto"
	}
	return "unknown"
}

// ParseMode reads a --dht-mode value: server, client or auto.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{ModeServer, ModeClient, ModeAuto} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("dht mode %q: want server, client or auto", s)
}

// Config configures a DHT. Zero values take the defaults.
type Config struct {
	// Mode: server or auto for volunteer nodes, client for clients and
	// projects. Default server.
	Mode Mode
	// Replication is r, the number of closest nodes that hold a job.
	// Default 5.
	Replication int
	// BucketSize is kad-dht's K. Default 20.
	BucketSize int
	// Concurrency is kad-dht's α. Default 10.
	Concurrency int
	// LookupCacheTTL is how long a closest-peers answer is reused, so a
	// party does at most one lookup per key per TTL. Default 90 s.
	LookupCacheTTL time.Duration
	// DisableLookupCache turns the lookup cache off: every lookup goes to
	// the network (LookupCacheTTL is then unused).
	DisableLookupCache bool
	// LookupCacheSize bounds the number of cached keys. Default 65536.
	LookupCacheSize int
	// LookupTimeout bounds one lookup. Default 30 s.
	LookupTimeout time.Duration
	// ProbeTimeout bounds a liveness probe (a dial and handshake). Default 3 s.
	ProbeTimeout time.Duration
	// ProbeBackoff is how long a peer that failed a probe is skipped
	// before it is probed again; it doubles on each failure, up to 16×.
	// Default 30 s.
	ProbeBackoff time.Duration
	// ProbeFresh is how recently a connected peer must have answered a
	// request of this party, or sent it one, to count as alive in a probe
	// round (Prober) without a ping: liveness learned from the traffic
	// already flowing. A peer that died since is caught by the failed
	// sync that follows, which marks it dead. Default 30 s.
	ProbeFresh time.Duration
	// DepartedKeep is how long a node that left the routing table still
	// counts among the nodes this party knew near a position
	// (NearestSeen: a claim certificate's acceptors that have left since).
	// Default 1 h.
	DepartedKeep time.Duration
	// AlwaysProbe pings every peer once per probe round, however recently
	// it was heard from (ProbeFresh unused).
	AlwaysProbe bool
	// DisableAutoRefresh turns off kad-dht's periodic routing-table refresh
	// (tests fill routing tables directly).
	DisableAutoRefresh bool
	// Bootstrap peers are dialled on Bootstrap.
	Bootstrap []peer.AddrInfo
	// OnLookup, when set, is told of every lookup that went to the
	// network (its FIND_NODE requests) and every near question (one
	// request), with the purpose its caller gave (WithPurpose; "other"
	// when none): where a party's lookup traffic comes from. It must be
	// fast and safe for concurrent use. Default none.
	OnLookup func(purpose string, rpcs int64)
}

// Deps is what a DHT needs of the party that runs it.
type Deps struct {
	// Endpoint is the party's overlay endpoint; kad-dht runs on its gated
	// host. Required.
	Endpoint *overlay.Endpoint
	// Env is the party's clock (liveness marks, the lookup cache, crawls).
	Env overlay.Env
}

// ApplyDefaults sets the zero fields of c to their defaults.
func (c *Config) ApplyDefaults() {
	if c.Replication == 0 {
		c.Replication = 5
	}
	if c.BucketSize == 0 {
		c.BucketSize = 20
	}
	if c.Concurrency == 0 {
		c.Concurrency = 10
	}
	if c.LookupCacheTTL == 0 {
		c.LookupCacheTTL = 90 * time.Second
	}
	if c.LookupCacheSize == 0 {
		c.LookupCacheSize = 65536
	}
	if c.LookupTimeout == 0 {
		c.LookupTimeout = 30 * time.Second
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = 3 * time.Second
	}
	if c.ProbeBackoff == 0 {
		c.ProbeBackoff = 30 * time.Second
	}
	if c.ProbeFresh == 0 {
		c.ProbeFresh = 30 * time.Second
	}
	if c.DepartedKeep == 0 {
		c.DepartedKeep = time.Hour
	}
}

// Validate reports the first bad field of c (after ApplyDefaults), naming
// it, in one line.
func (c *Config) Validate() error {
	switch {
	case c.Mode != ModeServer && c.Mode != ModeClient && c.Mode != ModeAuto:
		return fmt.Errorf("dht config: Mode %d is not server, client or auto", c.Mode)
	case c.Replication < 1:
		return fmt.Errorf("dht config: Replication %d is below 1", c.Replication)
	case c.BucketSize < c.Replication:
		return fmt.Errorf("dht config: BucketSize %d is below Replication %d", c.BucketSize, c.Replication)
	case c.Concurrency < 1:
		return fmt.Errorf("dht config: Concurrency %d is below 1", c.Concurrency)
	case c.LookupCacheTTL < 0:
		return fmt.Errorf("dht config: LookupCacheTTL %s is negative (DisableLookupCache turns the cache off)", c.LookupCacheTTL)
	case c.LookupCacheSize < 1:
		return fmt.Errorf("dht config: LookupCacheSize %d is below 1", c.LookupCacheSize)
	case c.LookupTimeout < 0:
		return fmt.Errorf("dht config: LookupTimeout %s is negative", c.LookupTimeout)
	case c.ProbeTimeout < 0:
		return fmt.Errorf("dht config: ProbeTimeout %s is negative", c.ProbeTimeout)
	case c.ProbeBackoff < 0:
		return fmt.Errorf("dht config: ProbeBackoff %s is negative", c.ProbeBackoff)
	case c.ProbeFresh < 0:
		return fmt.Errorf("dht config: ProbeFresh %s is negative", c.ProbeFresh)
	case c.DepartedKeep < 0:
		return fmt.Errorf("dht config: DepartedKeep %s is negative", c.DepartedKeep)
	}
	return nil
}

// validate reports a missing dependency.
func (d *Deps) validate() error {
	if d.Endpoint == nil {
		return errors.New("dht: Deps.Endpoint is nil")
	}
	return nil
}
