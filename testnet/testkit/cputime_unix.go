//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time this process has used, user and system.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
