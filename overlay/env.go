package overlay

import (
	"log/slog"
	"time"
)

// Env is what every service of a party shares: its clock, the seed of its
// random choices and its logger. The party (package node, say) builds one
// and passes it in each service's Deps, instead of copying the three into
// every service's Config. Zero values take the defaults.
type Env struct {
	// Now reads the clock. Default time.Now.
	Now func() time.Time
	// Seed seeds the services' random choices; each mixes in its party's
	// peer ID or certificate and a salt of its own, so parties sharing a
	// seed still draw apart. Default 1.
	Seed uint64
	// Logger receives structured logs. Default slog.Default().
	Logger *slog.Logger
}

// ApplyDefaults sets the zero fields of e to their defaults.
func (e *Env) ApplyDefaults() {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Seed == 0 {
		e.Seed = 1
	}
	if e.Logger == nil {
		e.Logger = slog.Default()
	}
}
