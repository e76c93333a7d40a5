package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/replica"
	"github.com/up-pool/up/store"
)

// Config configures a Pool. Zero values take the defaults (thesis 4.3).
type Config struct {
	// RepublishInterval is the mean time between republish rounds.
	// Default 25 min.
	RepublishInterval time.Duration
	// RepublishJitter spreads rounds uniformly over Interval ± Jitter, so
	// nodes do not republish in lockstep. Default 5 min.
	RepublishJitter time.Duration
	// RepublishFullEvery makes every RepublishFullEvery-th republish
	// round (the first included) sync every job; the others skip the
	// collected jobs already synced to the same view
	// (republish_skip.go). 1: every round syncs every job. Default 4.
	RepublishFullEvery int
	// ReplicaExpiry is how long a node keeps a job after it last found
	// itself among the job's r closest. Default 1 h.
	ReplicaExpiry time.Duration
	// TCollect is how long a collected job is kept (so its state can win
	// every merge) before it is deleted. Default 2 h.
	TCollect time.Duration
	// GoneKeep is how long a node remembers, on disk, the key of a
	// collected job it deleted, so a stale replica of it is told it was
	// collected rather than stored again (gone.go). Default T_collect.
	GoneKeep time.Duration
	// MaxGone bounds the gone records a node keeps; past it, those that
	// lapse soonest are forgotten first. Default 1,048,576 (~110 bytes of keys each).
	MaxGone int
	// TSkew is how far two clocks may disagree (thesis 3.2.4's T_skew):
	// a claim lapses here only TSkew after its deadline on this node's
	// clock (job.Lapse). Default claim.DefaultTSkew, 20 min.
	TSkew time.Duration
	// ExpiryInterval is how often claims lapse and collected jobs are
	// deleted. Default 10 s.
	ExpiryInterval time.Duration
	// ClaimCheck checks the proof of a claimed state or ready tombstone
	// another node sends (proof.go); nil accepts any well-formed one.
	ClaimCheck ClaimCheck
	// ResyncInterval is the least time between two Resyncs of one job
	// (resync.go). Default 10 s.
	ResyncInterval time.Duration
	// RPCTimeout bounds one job RPC. Default 30 s.
	RPCTimeout time.Duration
	// DisableLoops turns off the background rounds; tests drive them with
	// RepublishRound and ExpireNow.
	DisableLoops bool
}

// Deps is what a Pool needs of the node that runs it.
type Deps struct {
	// Endpoint is the node's overlay endpoint, which serves the job
	// protocols. Required.
	Endpoint *overlay.Endpoint
	// DHT finds a job's r closest nodes. Required.
	DHT *dht.DHT
	// Store holds the jobs, results and gone records' indexes. Required.
	Store *store.Store
	// GoneStore holds the payloads of gone records (gone.go), ordered by
	// when they lapse, apart from the jobs so that the job store's
	// compactions do not rewrite them; nil keeps them in Store.
	GoneStore *store.Store
	// Account signs this node's receipts for the jobs it stores
	// (receipt.go); nil signs none, and projects do not count this node
	// as holding what it stores.
	Account *Account
	// Env is the node's clock, its seed (the round jitter) and its logger.
	Env overlay.Env
}

// ApplyDefaults sets the zero fields of c to their defaults.
func (c *Config) ApplyDefaults() {
	if c.RepublishInterval == 0 {
		c.RepublishInterval = 25 * time.Minute
	}
	if c.RepublishJitter == 0 {
		c.RepublishJitter = 5 * time.Minute
	}
	if c.RepublishFullEvery == 0 {
		c.RepublishFullEvery = 4
	}
	if c.ReplicaExpiry == 0 {
		c.ReplicaExpiry = time.Hour
	}
	if c.TCollect == 0 {
		c.TCollect = 2 * time.Hour
	}
	if c.GoneKeep == 0 {
		c.GoneKeep = c.TCollect
	}
	if c.MaxGone == 0 {
		c.MaxGone = 1 << 20
	}
	if c.TSkew == 0 {
		c.TSkew = time.Duration(claim.DefaultTSkew) * time.Millisecond
	}
	if c.ExpiryInterval == 0 {
		c.ExpiryInterval = 10 * time.Second
	}
	if c.ResyncInterval == 0 {
		c.ResyncInterval = replica.ResyncIntervalMS * time.Millisecond
	}
	if c.RPCTimeout == 0 {
		c.RPCTimeout = 30 * time.Second
	}
}

// Validate reports the first bad field of c (after ApplyDefaults), naming
// it, in one line.
func (c *Config) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"RepublishInterval", c.RepublishInterval}, {"RepublishJitter", c.RepublishJitter}, {"ReplicaExpiry", c.ReplicaExpiry},
		{"TCollect", c.TCollect}, {"GoneKeep", c.GoneKeep}, {"TSkew", c.TSkew}, {"ExpiryInterval", c.ExpiryInterval},
		{"ResyncInterval", c.ResyncInterval}, {"RPCTimeout", c.RPCTimeout},
	} {
		if d.v < 0 {
			return fmt.Errorf("pool config: %s %s is negative", d.name, d.v)
		}
	}
	switch {
	case c.RepublishFullEvery < 0:
		return fmt.Errorf("pool config: RepublishFullEvery %d is negative", c.RepublishFullEvery)
	case c.MaxGone < 0:
		return fmt.Errorf("pool config: MaxGone %d is negative", c.MaxGone)
	case c.RepublishJitter >= c.RepublishInterval:
		return fmt.Errorf("pool config: RepublishJitter %s is not below RepublishInterval %s", c.RepublishJitter, c.RepublishInterval)
	}
	return nil
}

// validate reports a missing dependency.
func (d *Deps) validate() error {
	switch {
	case d.Endpoint == nil:
		return errors.New("pool: Deps.Endpoint is nil")
	case d.DHT == nil:
		return errors.New("pool: Deps.DHT is nil")
	case d.Store == nil:
		return errors.New("pool: Deps.Store is nil")
	}
	return nil
}
