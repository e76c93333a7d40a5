package testnet

import (
	"errors"
	"fmt"
	"math"
	"runtime/metrics"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
	"github.com/libp2p/go-libp2p/core/peer"
	dto "github.com/prometheus/client_model/go"

	"github.com/up-pool/up/agent"
)

// Quantiles are the median and 99th percentile of a set of durations.
type Quantiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func quantiles(ds []time.Duration) Quantiles {
	if len(ds) == 0 {
		return Quantiles{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(ds)))) - 1
		return float64(ds[max(0, min(i, len(ds)-1))]) / 1e6
	}
	return Quantiles{N: len(ds), P50: at(0.50), P99: at(0.99), Max: float64(ds[len(ds)-1]) / 1e6}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss * 1024 // kilobytes on Linux
}

// counters is a snapshot of the network's counters.
type counters struct {
	byProto, byRole map[string]float64
	lookups         map[string]int64
	lookupRPCs      int64
	bytes           int64
}

// benchCounters reads every node's RPC counters (overlay RPCs by protocol
// and requester role, kad-dht requests by type), every party's lookups,
// and the bytes on the wire.
func benchCounters(n *Network, agents []*agent.Agent) counters {
	c := counters{byProto: map[string]float64{}, byRole: map[string]float64{}, lookups: map[string]int64{}}
	for _, nd := range n.Live() {
		eachReceived(nd.Endpoint().Metrics(), func(proto, role string, v float64) {
			c.byProto[proto] += v
			c.byRole[role] += v
		})
		st := nd.DHT().Stats()
		c.lookups["node"] += st.Network
		c.lookups["cached"] += st.Cached
		c.lookupRPCs += st.RPCs
	}
	for _, a := range agents {
		st := a.DHT().Stats()
		c.lookups[string(a.Identity().Role)] += st.Network
		c.lookups["cached"] += st.Cached
		c.lookupRPCs += st.RPCs
	}
	c.bytes = n.wireBytes()
	return c
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// wireBytes is what the nodes sent plus what they received from parties
// that are not nodes (the project and clients have no counters): every
// byte on the wire once.
func (n *Network) wireBytes() int64 {
	nodes := map[peer.ID]bool{}
	for _, nd := range n.Live() {
		nodes[nd.ID()] = true
	}
	var sum int64
	for _, c := range n.bw {
		sum += c.GetBandwidthTotals().TotalOut
		for p, st := range c.GetBandwidthByPeer() {
			if !nodes[p] {
				sum += st.TotalIn
			}
		}
	}
	return sum
}

// cpuByLabel sums a gzipped pprof CPU profile's CPU time by the value of
// one label ("" for samples without it), and in total.
func cpuByLabel(gz []byte, key string) (map[string]time.Duration, time.Duration, error) {
	prof, col, err := parseCPUProfile(gz)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]time.Duration{}
	var total time.Duration
	for _, smp := range prof.Sample {
		if col >= len(smp.Value) {
			continue
		}
		val := ""
		if vs := smp.Label[key]; len(vs) > 0 {
			val = vs[0]
		}
		out[val] += time.Duration(smp.Value[col])
		total += time.Duration(smp.Value[col])
	}
	return out, total, nil
}

// parseCPUProfile parses a gzipped pprof CPU profile and finds the column
// of its samples' values that holds CPU nanoseconds.
func parseCPUProfile(gz []byte) (*profile.Profile, int, error) {
	prof, err := profile.ParseData(gz)
	if err != nil {
		return nil, 0, fmt.Errorf("read CPU profile: %w", err)
	}
	for i, t := range prof.SampleType {
		if t.Unit == "nanoseconds" {
			return prof, i, nil
		}
	}
	return nil, 0, errors.New("no CPU nanoseconds in the profile")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// liveHeap returns the bytes of heap the last garbage collection found
// reachable: what the process retains, without the garbage awaiting the
// next collection that HeapInuse counts.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// heapTrack follows the live heap over a run to tell growth from warm-up:
// the warm sample is the first taken once the run is past its warm-up (a
// fifth of the jobs harvested and, with a short T_collect, collected jobs
// being deleted); growth is the end's live heap over it.
type heapTrack struct {
	warm, end, max uint64
}

func (h *heapTrack) sample(pastWarmUp bool) uint64 {
	v := liveHeap()
	h.end = v
	h.max = max(h.max, v)
	if pastWarmUp && h.warm == 0 {
		h.warm = v
	}
	return v
}
