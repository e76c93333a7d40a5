package main

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent is the garbage collector's target every up process
// runs with unless GOGC is set: the heap may grow to five times what is
// live before a collection. The daemons' live heaps are small (tens of
// MiB) and their garbage is per message, so at Go's default (100) the
// collector ran every few MiB of traffic: `up bench --jobs 5000
// --claim-many 8` spent 0.8 ms of its 3.2 ms per job in GC and
// allocation. Memory is the cheaper resource on a volunteer's machine;
// GOMEMLIMIT, when set, still caps the heap.
const defaultGCPercent = 400

// gcPercent is the GC target to set: defaultGCPercent, or none (false)
// when the environment chose one with GOGC.
func gcPercent(getenv func(string) string) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false
	}
	return defaultGCPercent, true
}

// applyGCPolicy sets the process's GC target (gcPercent).
func applyGCPolicy() {
	if p, ok := gcPercent(os.Getenv); ok {
		debug.SetGCPercent(p)
	}
}
