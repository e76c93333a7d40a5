//go:build unix

package grind

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) this process has used so far,
// so benchmarks on a shared machine can report rates per CPU second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
