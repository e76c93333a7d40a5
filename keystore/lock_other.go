//go:build !unix

package keystore

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("lock held")

// lockFile does nothing where flock is missing: the store's own lock still
// guards a node's directory.
func lockFile(*os.File) error { return nil }
