package balancenet

import (
	"fmt"
	"math"
	"time"

	"github.com/up-pool/up/dht/grind"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/loadbalance"
)

// Config configures load balancing by moving positions (thesis 3.4,
// 4.2.1). Zero values take the defaults.
type Config struct {
	// Params are the load weights, φ, ΔL_trivial and cool-downs.
	Params loadbalance.Params
	// Off turns automatic balancing off: neither probes nor reactions to
	// piggy-backed loads. The node still answers others, follows a nudge
	// and can be balanced or moved by hand.
	Off bool
	// Interval is the mean time between probes; each waits Interval ±
	// half. Default 40 min (thesis: 20–60 min); at least 1 ms (Off, not a
	// negative Interval, turns balancing off).
	Interval time.Duration
	// Capacity is this node's declared capacity, relative (default 1).
	Capacity float64
	// Grinder finds the new identity of a move. Default: secp256k1
	// batched point addition on every core.
	Grinder grind.Grinder
	// GrindTimeout bounds one search for a new identity. Default 5 min.
	GrindTimeout time.Duration
	// MaxGrindBits is the longest prefix this node grinds an identity for:
	// the expected cost doubles with each bit (24 bits take about a
	// core-second), so a heavy node whose split lies deeper is left as it
	// is. Default 28; at most 256.
	MaxGrindBits int
}

// ApplyDefaults sets the zero fields of c to their defaults.
func (c *Config) ApplyDefaults() {
	c.Params.ApplyDefaults()
	if c.Interval == 0 {
		c.Interval = 40 * time.Minute
	}
	if c.Capacity == 0 {
		c.Capacity = 1
	}
	if c.Grinder == nil {
		c.Grinder = grind.Secp256k1{}
	}
	if c.GrindTimeout == 0 {
		c.GrindTimeout = 5 * time.Minute
	}
	if c.MaxGrindBits == 0 {
		c.MaxGrindBits = loadbalance.DefaultMaxGrindBits
	}
}

// Validate reports the first bad field of c (after ApplyDefaults), naming
// it, in one line.
func (c *Config) Validate() error {
	if err := c.Params.Validate(); err != nil {
		return fmt.Errorf("balance config: Params.%w", err)
	}
	switch {
	case c.Interval < 0:
		return fmt.Errorf("balance config: Interval %s is negative (Off turns balancing off)", c.Interval)
	case c.Interval < time.Millisecond:
		return fmt.Errorf("balance config: Interval %s is below 1ms", c.Interval)
	case !(c.Capacity > 0) || math.IsInf(c.Capacity, 0):
		return fmt.Errorf("balance config: Capacity %v is not a positive number", c.Capacity)
	case c.GrindTimeout < 0:
		return fmt.Errorf("balance config: GrindTimeout %s is negative", c.GrindTimeout)
	case c.MaxGrindBits < 1 || c.MaxGrindBits > keyspace.Bits:
		return fmt.Errorf("balance config: MaxGrindBits %d is not in 1..%d", c.MaxGrindBits, keyspace.Bits)
	}
	return nil
}

// controller is the controller's configuration for c: probes wait
// Interval ± half. lastMove is when the node last moved (Unix ms).
func (c *Config) controller(lastMove int64) loadbalance.ControllerConfig {
	half := c.Interval.Milliseconds() / 2
	return loadbalance.ControllerConfig{Params: c.Params, Off: c.Off, ProbeMin: half, ProbeMax: half + c.Interval.Milliseconds(),
		Capacity: c.Capacity, MaxGrindBits: c.MaxGrindBits, LastMove: lastMove}
}
