package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sort"
	"time"

	"github.com/google/pprof/profile"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
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
func benchCounters(n *testnet.Network, agents []*agent.Agent) counters {
	c := counters{byProto: map[string]float64{}, byRole: map[string]float64{}, lookups: map[string]int64{}}
	for _, nd := range n.Live() {
		testnet.EachReceived(nd.Endpoint().Metrics(), func(proto, role string, v float64) {
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
	c.bytes = n.WireBytes()
	return c
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

// HeapSample is one sample of the live heap during a run.
type HeapSample struct {
	S         float64 `json:"s"`         // since the first submission
	Harvested int64   `json:"harvested"` // jobs harvested by then
	LiveMiB   float64 `json:"live_mib"`  // reachable at the last GC
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

// startMeasuring starts the steady phase: it reads the counters, starts
// the CPU profile when asked (a note in the report when one is already
// running), and reads the CPU time and the clock.
func (r *benchRun) startMeasuring() {
	r.m0 = benchCounters(r.net, r.parties())
	if r.o.ProjectShare || r.o.CPUProfile != nil {
		r.prof = new(bytes.Buffer)
		if err := pprof.StartCPUProfile(r.prof); err != nil {
			r.prof = nil
			r.rep.ShareNote = "not sampled: " + err.Error()
		}
	}
	r.cpu0, r.t0 = testkit.CPUTime(), time.Now()
}

// fillRates fills the report's elapsed time, throughput, CPU per job and
// the project's time in its submit and harvest calls.
func (r *benchRun) fillRates() {
	jobs := float64(r.o.Jobs)
	r.rep.ElapsedS = r.elapsed.Seconds()
	r.rep.JobsPerSec = jobs / r.elapsed.Seconds()
	r.rep.CPUUSPerJob = float64(r.cpu.Microseconds()) / jobs
	r.rep.SubmitWallS, r.rep.HarvestWallS = r.submitWall.Seconds(), r.harvestWall.Seconds()
}

// writeProfiles writes the heap profile (after a garbage collection) and
// the CPU profile of the steady phase, those asked for.
func (r *benchRun) writeProfiles() error {
	if r.o.HeapProfile != nil {
		runtime.GC()
		if err := pprof.WriteHeapProfile(r.o.HeapProfile); err != nil {
			return fmt.Errorf("write the heap profile: %w", err)
		}
	}
	if r.prof != nil && r.o.CPUProfile != nil {
		if _, err := r.o.CPUProfile.Write(r.prof.Bytes()); err != nil {
			return fmt.Errorf("write the CPU profile: %w", err)
		}
	}
	return nil
}

// splitProfiledCPU, with o.ProjectShare, splits the profiled CPU per job
// by party (the goroutines' pprof label; unlabelled: nodes+runtime) and
// by kind of work, for the whole process and for the project.
func (r *benchRun) splitProfiledCPU() {
	if r.prof == nil || !r.o.ProjectShare {
		return
	}
	jobs := float64(r.o.Jobs)
	by, total, err := cpuByLabel(r.prof.Bytes(), "party")
	if err != nil {
		r.rep.ShareNote = "profile unreadable: " + err.Error()
		return
	}
	r.rep.PartyCPUUSPerJob = map[string]float64{}
	for k, v := range by {
		if k == "" {
			k = "nodes+runtime"
		}
		r.rep.PartyCPUUSPerJob[k] = float64(v.Microseconds()) / jobs
	}
	r.rep.ProfiledCPUS = total.Seconds()
	if work, err := cpuByWork(r.prof.Bytes(), "", ""); err == nil {
		r.rep.WorkCPUUSPerJob = usPerJob(work, jobs)
	}
	if work, err := cpuByWork(r.prof.Bytes(), "party", "project"); err == nil {
		r.rep.ProjectWorkCPUUSPerJob = usPerJob(work, jobs)
	}
	r.rep.ShareNote = "pprof samples (100 Hz) by goroutine label; the project's and clients' connection loops carry their labels, GC workers count as runtime"
}

// countRPCs fills the RPCs the nodes served per job, by protocol and by
// requester role, and the lookups per job, from the growth of the
// counters from the start of the steady phase to m1.
func (r *benchRun) countRPCs(m1 counters) {
	jobs, m0 := float64(r.o.Jobs), r.m0
	r.rep.RPCsByProtocol, r.rep.RPCsByRole = map[string]float64{}, map[string]float64{}
	for k, v := range m1.byProto {
		if d := v - m0.byProto[k]; d > 0 {
			r.rep.RPCsByProtocol[k] = d / jobs
			r.rep.RPCsPerJob += d / jobs
		}
	}
	for k, v := range m1.byRole {
		if d := v - m0.byRole[k]; d > 0 {
			r.rep.RPCsByRole[k] = d / jobs
		}
	}
	r.rep.LookupsPerJob = map[string]float64{}
	for k, v := range m1.lookups {
		r.rep.LookupsPerJob[k] = float64(v-m0.lookups[k]) / jobs
	}
	r.rep.LookupRPCsPerJob = float64(m1.lookupRPCs-m0.lookupRPCs) / jobs
}

// countClaims sums the clients' claims, runs, empty finds and releases,
// and fills the claim times' quantiles.
func (r *benchRun) countClaims() {
	for _, c := range r.cls {
		st := c.Status()
		r.rep.ClaimsWon += st.Claims.Won
		r.rep.ClaimsLost += st.Claims.Lost
		r.rep.ClaimsFailed += st.Claims.Failed + st.Claims.Unknown
		r.rep.Runs += st.Done
		r.rep.EmptyFinds += st.Queries["empty"]
		r.rep.Released += st.Released
	}
	r.claimMu.Lock()
	r.rep.Claim = r.claimTimes.quantiles()
	r.claimMu.Unlock()
}

// readLedger fills the latency from submission to harvest of each job
// with a result, and the ledger's counts of results, collected jobs and
// valid units.
func (r *benchRun) readLedger() error {
	var lat []time.Duration
	rows, err := r.ledger.DB().Query(`SELECT j.prepared, r.harvested FROM jobs j JOIN results r ON r.job = j.id`)
	if err != nil {
		return fmt.Errorf("read the submit-to-harvest times from the ledger: %w", err)
	}
	for rows.Next() {
		var a, b int64
		if err := rows.Scan(&a, &b); err != nil {
			rows.Close()
			return fmt.Errorf("read the submit-to-harvest times from the ledger: %w", err)
		}
		lat = append(lat, time.Duration(b-a)*time.Millisecond)
	}
	rows.Close()
	r.rep.SubmitToHarvest = quantiles(lat)
	db := r.ledger.DB()
	_ = db.QueryRow(`SELECT COUNT(*) FROM results`).Scan(&r.rep.LedgerResults)
	_ = db.QueryRow(`SELECT COUNT(*) FROM jobs WHERE state = ?`, project.StateCollected).Scan(&r.rep.LedgerCollect)
	_ = db.QueryRow(`SELECT COUNT(*) FROM units WHERE status = ?`, project.UnitValid).Scan(&r.rep.UnitsValid)
	return nil
}

// countHeld counts the jobs the live nodes' stores still hold.
func (r *benchRun) countHeld() {
	for _, nd := range r.net.Live() {
		nd.Pool().Each(func(pool.Held) bool { r.rep.HeldAtEnd++; return true })
	}
}

// awaitEmptyStores runs a republish round, then waits, up to T_collect +
// 30 s, for the live nodes' stores and indexes to be empty, and reports
// how long after the last harvest they were, or what was left (logging
// each job left).
func (r *benchRun) awaitEmptyStores(ctx context.Context) {
	done := r.t0.Add(r.elapsed)
	// Replicas the claim, result or collect did not reach (a holder
	// beyond the listed r, a call that failed) learn the collected
	// state from the next republish round, every 20-30 min on the
	// nodes: run one now instead of waiting for it.
	r.net.RepublishAll(ctx)
	deadline := time.Now().Add(r.o.TCollect + 30*time.Second)
	r.rep.EmptyAfterS = -1
	for {
		r.rep.LeftJobs, r.rep.LeftEntries = r.left()
		if r.rep.LeftJobs == 0 && r.rep.LeftEntries == 0 {
			r.rep.EmptyAfterS = time.Since(done).Seconds()
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.logLeft()
			return
		}
		select {
		case <-time.After(250 * time.Millisecond): // the nodes' expiry loops run on their own
		case <-ctx.Done():
		}
	}
}

// left counts the jobs the live nodes' stores hold and the entries their
// indexes hold.
func (r *benchRun) left() (jobs, entries int) {
	for _, nd := range r.net.Live() {
		nd.Pool().Each(func(pool.Held) bool { jobs++; return true })
		entries += nd.Index().Len()
	}
	return jobs, entries
}

// logLeft logs each job a live node's store still holds after T_collect.
func (r *benchRun) logLeft() {
	for _, nd := range r.net.Live() {
		nd.Pool().Each(func(h pool.Held) bool {
			r.logf("left after T_collect: %s holds job %x in state %s (at %d)", nd.Name(), h.Key[len(h.Key)-4:], h.State.Phase, h.State.At)
			return true
		})
	}
}

// measureWireAndMemory fills the bytes on the wire per job (once the
// bandwidth meters have caught up), the peak RSS, the heap in use and the
// live heap's samples.
func (r *benchRun) measureWireAndMemory() {
	// libp2p's bandwidth meters update once a second.
	time.Sleep(1200 * time.Millisecond)
	r.rep.BytesPerJob = float64(r.net.WireBytes()-r.m0.bytes) / float64(r.o.Jobs)
	r.rep.PeakRSSMiB = float64(testkit.PeakRSS()) / (1 << 20)
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	if metrics.Read(gogc); gogc[0].Value.Kind() == metrics.KindUint64 {
		r.rep.GCPercent = int(gogc[0].Value.Uint64())
	}
	r.rep.RSSPerNodeMiB = r.rep.PeakRSSMiB / float64(r.o.Nodes)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.rep.HeapMiB = float64(ms.HeapInuse) / (1 << 20)
	if r.heap.warm > 0 {
		r.rep.LiveHeapWarmMiB = float64(r.heap.warm) / (1 << 20)
		r.rep.LiveHeapEndMiB = float64(r.heap.end) / (1 << 20)
		r.rep.LiveHeapMaxMiB = float64(r.heap.max) / (1 << 20)
	}
}
