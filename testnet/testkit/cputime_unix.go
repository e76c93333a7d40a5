//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user and system) this process has used so
// far, so benchmarks on a shared machine can report costs per CPU second;
// 0 where it cannot be read.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSS is the most resident memory this process has used so far, in
// bytes (Linux reports kilobytes); 0 where it cannot be read.
func PeakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
