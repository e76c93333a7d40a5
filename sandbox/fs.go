package sandbox

import (
	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// workDirFS mounts dir, read-write, at "/" and nowhere else.
//
// wazero's WASI already refuses a path that climbs out of its mount ("..",
// absolute paths are relative to the mount) but creates symbolic links as
// asked, and the host then follows them when the guest opens one: a link
// to "../../etc/passwd" would read the host's file (wazero issue 2321; its
// maintainers leave hardening WASI to the embedder). So the guest may not
// create symbolic links, and Run refuses a work directory that holds one.
func workDirFS(dir string) wazero.FSConfig {
	fs := noSymlinks{sysfs.DirFS(dir)}
	return wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(fs, "/")
}

// noSymlinks is a file system that refuses to create symbolic links.
type noSymlinks struct{ experimentalsys.FS }

// Symlink refuses: EPERM, as WASI's own rule for absolute link targets.
func (noSymlinks) Symlink(_, _ string) experimentalsys.Errno { return experimentalsys.EPERM }
