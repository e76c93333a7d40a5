//go:build unix

package keystore

import (
	"os"
	"syscall"
)

var errWouldBlock error = syscall.EWOULDBLOCK

// lockFile takes an exclusive, non-blocking flock on f.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}
