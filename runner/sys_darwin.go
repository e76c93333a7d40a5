package runner

import (
	"syscall"
	"time"
)

// sysProcAttr puts the launcher in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// setAlarm is a no-op on Darwin: external programs get no wall-clock
// backstop and rely on the runner alone.
func setAlarm(time.Duration) error { return nil }
