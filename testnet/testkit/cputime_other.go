//go:build !unix

package testkit

import "time"

// CPUTime is 0 here: the process's CPU time cannot be read, and
// benchmarks skip their per-CPU-second figures.
func CPUTime() time.Duration { return 0 }
