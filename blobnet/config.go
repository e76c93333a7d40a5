package blobnet

import (
	"errors"
	"fmt"
	"time"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/store"
)

// Defaults of a Config.
const (
	// DefaultMaxProjectBytes is 1 GiB: what one project may have stored on
	// one node. At r = 5 a project's 1 GiB of blobs costs the network
	// 5 GiB, spread over the nodes near its blobs' keys; a volunteer's
	// node holds at most this much of any one project.
	DefaultMaxProjectBytes = 1 << 30
	// DefaultMaxProjectBlobs is 64 blobs per project per node: the count
	// bounds the statements and manifests (5 KiB each at most) and the
	// repair work per round, whatever the blobs' sizes.
	DefaultMaxProjectBlobs = 64
)

// Config configures a Service. Zero values take the defaults.
type Config struct {
	// MaxProjectBytes bounds, in bytes, the blobs one project may have
	// stored on this node: the sum of their manifests' sizes, each blob
	// counted whole (whatever chunks it shares with others) from the
	// offer on, complete or not. Default DefaultMaxProjectBytes (1 GiB).
	MaxProjectBytes int64
	// MaxProjectBlobs bounds the blobs one project may have stored on this
	// node. Default DefaultMaxProjectBlobs (64).
	MaxProjectBlobs int
	// RepairInterval is the mean time between repair rounds, the job
	// republish period. Default 25 min.
	RepairInterval time.Duration
	// RepairJitter spreads rounds uniformly over Interval ± Jitter.
	// Default 5 min.
	RepairJitter time.Duration
	// IncompleteKeep is how long a blob offered here but still missing
	// chunks is kept (from its offer) before it is deleted: long enough
	// for two repair rounds to complete it. Default 1 h.
	IncompleteKeep time.Duration
	// RPCTimeout bounds one offer or one chunk request this node makes.
	// Default 30 s (1 MiB at 35 KB/s).
	RPCTimeout time.Duration
	// PlaceTimeout bounds one placement of a blob on its r closest (a
	// project's Replicate offer) or one round's pushes of one blob.
	// Default 10 min.
	PlaceTimeout time.Duration
	// PushConcurrency is how many chunks this node sends to one node at
	// once. Default 4.
	PushConcurrency int
	// DisableLoops turns off the background repair round; tests drive it
	// with RepairRound.
	DisableLoops bool
}

// ApplyDefaults sets the zero fields of c to their defaults.
func (c *Config) ApplyDefaults() {
	if c.MaxProjectBytes == 0 {
		c.MaxProjectBytes = DefaultMaxProjectBytes
	}
	if c.MaxProjectBlobs == 0 {
		c.MaxProjectBlobs = DefaultMaxProjectBlobs
	}
	if c.RepairInterval == 0 {
		c.RepairInterval = 25 * time.Minute
	}
	if c.RepairJitter == 0 {
		c.RepairJitter = 5 * time.Minute
	}
	if c.IncompleteKeep == 0 {
		c.IncompleteKeep = time.Hour
	}
	if c.RPCTimeout == 0 {
		c.RPCTimeout = 30 * time.Second
	}
	if c.PlaceTimeout == 0 {
		c.PlaceTimeout = 10 * time.Minute
	}
	if c.PushConcurrency == 0 {
		c.PushConcurrency = 4
	}
}

// Validate reports the first bad field of c (after ApplyDefaults), naming
// it, in one line.
func (c *Config) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"RepairInterval", c.RepairInterval}, {"RepairJitter", c.RepairJitter}, {"IncompleteKeep", c.IncompleteKeep},
		{"RPCTimeout", c.RPCTimeout}, {"PlaceTimeout", c.PlaceTimeout},
	} {
		if d.v < 0 {
			return fmt.Errorf("blobnet config: %s %s is negative", d.name, d.v)
		}
	}
	switch {
	case c.MaxProjectBytes < 0:
		return fmt.Errorf("blobnet config: MaxProjectBytes %d is negative", c.MaxProjectBytes)
	case c.MaxProjectBlobs < 0:
		return fmt.Errorf("blobnet config: MaxProjectBlobs %d is negative", c.MaxProjectBlobs)
	case c.PushConcurrency < 0:
		return fmt.Errorf("blobnet config: PushConcurrency %d is negative", c.PushConcurrency)
	case c.RepairJitter >= c.RepairInterval:
		return fmt.Errorf("blobnet config: RepairJitter %s is not below RepairInterval %s", c.RepairJitter, c.RepairInterval)
	}
	return nil
}

// Deps is what a Service needs of the node that runs it.
type Deps struct {
	// Endpoint is the node's overlay endpoint, which serves the blob
	// protocols. Required.
	Endpoint *overlay.Endpoint
	// DHT finds a blob's r closest nodes. Required.
	DHT *dht.DHT
	// Store holds the statements, manifests, chunks and certificates.
	// Required.
	Store *store.Store
	// Env is the node's clock, seed (the round jitter) and logger.
	Env overlay.Env
}

func (d *Deps) validate() error {
	switch {
	case d.Endpoint == nil:
		return errors.New("blobnet: Deps.Endpoint is nil")
	case d.DHT == nil:
		return errors.New("blobnet: Deps.DHT is nil")
	case d.Store == nil:
		return errors.New("blobnet: Deps.Store is nil")
	}
	return nil
}
