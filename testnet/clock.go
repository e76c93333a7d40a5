package testnet

import (
	"sync"
	"time"
)

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
