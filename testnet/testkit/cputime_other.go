//go:build !unix

package testkit

import "time"

var processStart = time.Now()

// CPUTime is, where the process's CPU time cannot be read, the wall time
// since it started.
func CPUTime() time.Duration { return time.Since(processStart) }
