//go:build !unix

package apps

import "time"

var processStart = time.Now()

// cpuTime approximates CPU time by wall time where getrusage is unavailable
// (burn spins a single goroutine, so the two are close).
func cpuTime() time.Duration { return time.Since(processStart) }
