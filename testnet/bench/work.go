package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// workKinds are the kinds of work a CPU sample is charged to, in priority
// order: a sample whose stack holds frames of several kinds counts for the
// first: an X25519 multiplication under a result's opening counts as
// sealing, not as the curve arithmetic signatures share; a socket write
// under the Noise session counts as a socket syscall, its
// ChaCha20-Poly1305 sealing as channel encryption; an allocation inside
// CBOR decoding counts as encoding.
var workKinds = []struct {
	name     string
	patterns []string // substrings of function names
}{
	{"result sealing", []string{"x/crypto/nacl", "x/crypto/curve25519", "crypto/ecdh", "x/crypto/salsa20", "curve25519-voi/primitives/x25519"}},
	{"signatures", []string{"crypto/ed25519", "fips140/ed25519", "fips140/edwards25519", "curve25519-voi"}},
	{"channel encryption", []string{"chacha20poly1305", "x/crypto/chacha20"}},
	{"store", []string{"cockroachdb/pebble"}},
	{"socket syscalls", []string{"internal/poll.(*FD).Read", "internal/poll.(*FD).Write", "internal/poll.(*FD).Writev", "syscall.write", "syscall.read"}},
	{"encoding", []string{"fxamacker/cbor", "google.golang.org/protobuf", "go-multiaddr", "go-cid", "go-multihash"}},
	{"hashing", []string{"crypto/sha256", "fips140/sha256", "sha256-simd"}},
	{"GC and allocation", []string{"runtime.mallocgc", "runtime.gcBgMarkWorker", "runtime.gcDrain", "runtime.bgsweep", "runtime.scanobject", "runtime.gcAssist"}},
	{"scheduler", []string{"runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.goready", "runtime.futex", "runtime.selectgo", "runtime.chansend", "runtime.chanrecv"}},
}

// otherWork names the samples of no listed kind.
const otherWork = "other"

// workKind returns the kind of work of a stack of function names, leaf
// first.
func workKind(funcs []string) string {
	for _, k := range workKinds {
		for _, f := range funcs {
			for _, p := range k.patterns {
				if strings.Contains(f, p) {
					return k.name
				}
			}
		}
	}
	return otherWork
}

// cpuByWork sums a gzipped pprof CPU profile's CPU time by kind of work
// (workKinds), over the samples whose label key has value val (all samples
// when key is "").
func cpuByWork(gz []byte, key, val string) (map[string]time.Duration, error) {
	prof, col, err := parseCPUProfile(gz)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Duration{}
	var funcs []string
	for _, smp := range prof.Sample {
		if col >= len(smp.Value) {
			continue
		}
		if key != "" {
			if vs := smp.Label[key]; len(vs) == 0 || vs[0] != val {
				continue
			}
		}
		funcs = funcs[:0]
		for _, loc := range smp.Location {
			for _, ln := range loc.Line {
				if ln.Function != nil {
					funcs = append(funcs, ln.Function.Name)
				}
			}
		}
		out[workKind(funcs)] += time.Duration(smp.Value[col])
	}
	return out, nil
}

// workOrder lists the kinds of work in report order.
func workOrder() []string {
	out := make([]string, 0, len(workKinds)+1)
	for _, k := range workKinds {
		out = append(out, k.name)
	}
	return append(out, otherWork)
}

// printWork prints one line of CPU µs per job by kind of work, in report
// order, kinds without CPU left out.
func printWork(w io.Writer, title string, us map[string]float64) {
	if len(us) == 0 {
		return
	}
	var parts []string
	for _, k := range workOrder() {
		if v := us[k]; v >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	fmt.Fprintf(w, "  %-17s %s µs/job\n", title, strings.Join(parts, ", "))
}

// usPerJob converts CPU times into µs per job.
func usPerJob(cpu map[string]time.Duration, jobs float64) map[string]float64 {
	out := make(map[string]float64, len(cpu))
	for k, v := range cpu {
		out[k] = float64(v.Microseconds()) / jobs
	}
	return out
}
