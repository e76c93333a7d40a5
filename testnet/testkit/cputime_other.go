//go:build !unix

package testkit

import "time"

// CPUTime is 0 here: the process's CPU time cannot be read, and
// benchmarks skip their per-CPU-second figures.
func CPUTime() time.Duration { return 0 }

// PeakRSS is 0 here: the process's peak memory cannot be read.
func PeakRSS() int64 { return 0 }
