package runner

import (
	"syscall"
	"time"
	"unsafe"
)

// sysProcAttr puts the launcher in its own process group, and kills it if
// the runner's thread dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// setAlarm arms ITIMER_REAL, which survives execve: the exec'd program gets
// SIGALRM (fatal unless handled) after d.
func setAlarm(d time.Duration) error {
	tv := syscall.NsecToTimeval(d.Nanoseconds())
	itv := [2]syscall.Timeval{{}, tv} // it_interval, it_value
	const itimerReal = 0
	if _, _, errno := syscall.RawSyscall(syscall.SYS_SETITIMER, itimerReal, uintptr(unsafe.Pointer(&itv)), 0); errno != 0 {
		return errno
	}
	return nil
}
