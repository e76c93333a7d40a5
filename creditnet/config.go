package creditnet

import (
	"errors"
	"fmt"
	"time"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/store"
)

// Config configures a Service. Zero values take the defaults.
type Config struct {
	// KeepPerProject is how many receipts of one project to one client
	// this node keeps, the newest by sequence number: the newest carries
	// the total, the others let a reader check it. Default 4.
	KeepPerProject int
	// MaxProjectsPerClient bounds the projects whose receipts this node
	// keeps for one client; a put of another project's is refused. With
	// KeepPerProject and credit.MaxSignedLen it bounds one client's bytes
	// here (32 × 4 × 33 KiB ≈ 4 MiB at most; a few KiB in practice).
	// Default 32.
	MaxProjectsPerClient int
	// MaxClients bounds the clients whose receipts this node keeps; a put
	// for another is refused. Default 100,000.
	MaxClients int
	// RepairInterval is the time between repair rounds, the job republish
	// period. Default 25 min.
	RepairInterval time.Duration
	// RPCTimeout bounds one put this node makes in a repair round.
	// Default 10 s.
	RPCTimeout time.Duration
	// Quota bounds the jobs in progress of the clients whose record node
	// this is (package quota): initial 8, halved on each failure, doubled
	// on each valid result, 1..64.
	Quota quota.Config
	// DisableLoops turns off the background repair round; tests drive it
	// with RepairRound.
	DisableLoops bool
}

// ApplyDefaults sets the zero fields of c to their defaults.
func (c *Config) ApplyDefaults() {
	if c.KeepPerProject == 0 {
		c.KeepPerProject = 4
	}
	if c.MaxProjectsPerClient == 0 {
		c.MaxProjectsPerClient = 32
	}
	if c.MaxClients == 0 {
		c.MaxClients = 100_000
	}
	if c.RepairInterval == 0 {
		c.RepairInterval = 25 * time.Minute
	}
	if c.RPCTimeout == 0 {
		c.RPCTimeout = 10 * time.Second
	}
	c.Quota.ApplyDefaults()
}

// Validate reports the first bad field of c (after ApplyDefaults), naming
// it, in one line.
func (c *Config) Validate() error {
	switch {
	case c.KeepPerProject < 1:
		return fmt.Errorf("creditnet config: KeepPerProject %d is below 1", c.KeepPerProject)
	case c.MaxProjectsPerClient < 1:
		return fmt.Errorf("creditnet config: MaxProjectsPerClient %d is below 1", c.MaxProjectsPerClient)
	case c.MaxClients < 1:
		return fmt.Errorf("creditnet config: MaxClients %d is below 1", c.MaxClients)
	case c.RepairInterval < 0:
		return fmt.Errorf("creditnet config: RepairInterval %s is negative", c.RepairInterval)
	case c.RPCTimeout < 0:
		return fmt.Errorf("creditnet config: RPCTimeout %s is negative", c.RPCTimeout)
	}
	return c.Quota.Validate()
}

// Deps is what a Service needs of the node that runs it.
type Deps struct {
	// Endpoint serves the credit protocols. Required.
	Endpoint *overlay.Endpoint
	// DHT finds a client's r closest nodes. Required.
	DHT *dht.DHT
	// Store holds the receipts. Required.
	Store *store.Store
	// Identity signs the quota tickets (a snapshot is kept). Required.
	Identity *keystore.Identity
	// Env is the node's clock and logger.
	Env overlay.Env
}

func (d *Deps) validate() error {
	switch {
	case d.Endpoint == nil:
		return errors.New("creditnet: Deps.Endpoint is nil")
	case d.DHT == nil:
		return errors.New("creditnet: Deps.DHT is nil")
	case d.Store == nil:
		return errors.New("creditnet: Deps.Store is nil")
	case d.Identity == nil:
		return errors.New("creditnet: Deps.Identity is nil")
	}
	return nil
}
