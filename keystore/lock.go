package keystore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// ErrInUse reports a data directory whose lock another process holds.
var ErrInUse = errors.New("in use by another process")

// Lock is a held lock on a party's data directory: one process at a time
// runs a node, client or project on it.
type Lock struct {
	once sync.Once
	f    *os.File
}

// LockFile is the lock file of a data directory.
func (p Paths) LockFile() string { return filepath.Join(p.Dir, "lock") }

// LockDir takes the lock of the data directory dir, held until Unlock or
// the process ends (the kernel drops it with the process, so a killed
// party leaves no stale lock). A directory another process holds fails
// with ErrInUse.
func LockDir(dir string) (*Lock, error) {
	path := Paths{Dir: dir}.LockFile()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("data directory %s is %w", dir, ErrInUse)
		}
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. Safe to call more than once, and on nil.
func (l *Lock) Unlock() {
	if l == nil {
		return
	}
	l.once.Do(func() { _ = l.f.Close() }) // closing the file drops its lock
}
