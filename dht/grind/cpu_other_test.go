//go:build !unix

package grind

import "time"

// cpuTime is unavailable here; benchmarks then skip their per-CPU-second
// metrics.
func cpuTime() time.Duration { return 0 }
