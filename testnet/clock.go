package testnet

import (
	"sync"
	"time"
)

// SetClockOffset sets node i's clock off its clock at start (the
// harness clock, or the adversary's for a skewed node) by d, at once: a
// test makes a chosen node's clock skewed, or jump, mid-run. Durations
// measured on the node span the change as they would on a real machine
// whose clock was set.
func (n *Network) SetClockOffset(i int, d time.Duration) {
	n.offsets[i].Store(int64(d))
}

// Clock is a settable clock for tests: every party of a network can read
// it (Options.Now = clock.Now) and the test moves it forward.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock set to start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
