package client

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// Memory classes: a job's resource keyword says how much memory it needs.
const (
	MemSmall  = "mem:small"  // under 512 MiB
	MemMedium = "mem:medium" // under 4 GiB
	MemLarge  = "mem:large"  // 4 GiB or more
)

// Bandwidth classes: a job that moves much data carries the resource
// keyword of the bandwidth it needs.
const (
	BwMedium = "bw:medium" // needs at least 1 Mbit/s
	BwHigh   = "bw:high"   // needs at least 10 Mbit/s
)

// Platform classes: a job that runs only on some platforms carries the
// resource keyword "os:<GOOS>" or "arch:<GOARCH>" (Go's names, e.g.
// "os:linux", "arch:arm64"); a job with neither runs anywhere.
const (
	OSPrefix   = "os:"
	ArchPrefix = "arch:"
)

// KnownOS and KnownArch are the platforms a query can rule out: the
// operating systems and architectures Go builds for, less the exotic
// ones (the index bounds a query to 64 terms, so the list cannot be
// open-ended). A job naming a platform outside these lists is found by
// every machine: name a listed one.
var (
	KnownOS   = []string{"aix", "android", "darwin", "dragonfly", "freebsd", "illumos", "ios", "linux", "netbsd", "openbsd", "plan9", "solaris", "windows"}
	KnownArch = []string{"386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle", "ppc64", "ppc64le", "riscv64", "s390x"}
)

// Attributes are what the machine offers.
type Attributes struct {
	Memory int64 // bytes available to jobs (0: unknown, no memory class ruled out)
	// OS and Arch are the machine's platform in Go's names ("linux",
	// "amd64"): jobs for another known platform are ruled out. New fills
	// them from the running binary when empty; QueryFor rules nothing out
	// for an empty one.
	OS, Arch string
	// Bandwidth is the machine's network bandwidth in bit/s (0: unknown,
	// no bandwidth class ruled out). Nothing measures it: the volunteer
	// sets it (up client run --bandwidth).
	Bandwidth int64
	Exclude   []string // further resource keywords this machine cannot serve, e.g. "bw:fast"
}

// withPlatform fills an unset platform from the running binary.
func (a Attributes) withPlatform() Attributes {
	if a.OS == "" {
		a.OS = runtime.GOOS
	}
	if a.Arch == "" {
		a.Arch = runtime.GOARCH
	}
	return a
}

// QueryFor builds the index query for a project's jobs this machine can
// run: the project keyword, minus the memory and bandwidth classes above
// the machine's, the other known operating systems and architectures, and any
// excluded keyword. Pure.
func QueryFor(project string, a Attributes) string {
	var not []string
	switch {
	case a.Memory > 0 && a.Memory < 512<<20:
		not = append(not, MemMedium, MemLarge)
	case a.Memory > 0 && a.Memory < 4<<30:
		not = append(not, MemLarge)
	}
	switch {
	case a.Bandwidth > 0 && a.Bandwidth < 1_000_000:
		not = append(not, BwMedium, BwHigh)
	case a.Bandwidth > 0 && a.Bandwidth < 10_000_000:
		not = append(not, BwHigh)
	}
	not = append(not, others(OSPrefix, KnownOS, a.OS)...)
	not = append(not, others(ArchPrefix, KnownArch, a.Arch)...)
	for _, k := range a.Exclude {
		if !slices.Contains(not, k) {
			not = append(not, k)
		}
	}
	if len(not) == 0 {
		return project
	}
	return fmt.Sprintf("%s AND NOT (%s)", project, strings.Join(not, " OR "))
}

// others are the keywords prefix+name of the known names other than
// mine, none when mine is unset.
func others(prefix string, known []string, mine string) []string {
	if mine == "" {
		return nil
	}
	var out []string
	for _, n := range known {
		if n != mine {
			out = append(out, prefix+n)
		}
	}
	return out
}
