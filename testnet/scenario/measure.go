package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// modelled reports whether the simulator counts RPCs of the kind: it
// does not model "other" (admission hellos, CRL fetches). It models the
// republish rounds' pings ("ping"), not the index writer's.
func modelled(kind string) bool { return kind != "other" }

// kindOf classifies a counted protocol ("dht:<type>" for kad-dht
// requests). Lookups are kad-dht's requests and the near questions of
// region views and crawls, as in the simulator.
func kindOf(proto string) string {
	switch {
	case strings.HasPrefix(proto, "dht:") || proto == wire.ProtoNear:
		return "lookup"
	case strings.HasPrefix(proto, "/up/job/"):
		return "job"
	case strings.HasPrefix(proto, "/up/idx/"):
		return "index"
	case strings.HasPrefix(proto, "/up/claim/"):
		return "claim"
	case strings.HasPrefix(proto, "/up/lb/"):
		return "lb"
	case proto == wire.ProtoPing:
		return "ping"
	}
	return "other"
}

// sampler reads every live node's received-RPC counters once a second
// and turns their growth into rows: the busiest node and the mean over
// nodes, with and without lookups. A node instance (a restart or a move
// starts a new one, with counters from zero) is told apart by its metrics.
type sampler struct {
	net    *testnet.Network
	window time.Duration
	prev   map[*overlay.Metrics]map[string]float64
	last   time.Time
	rows   []SecondRow
	total  map[string]float64 // RPCs by protocol within the window
	claims map[string]*logClaim
	// cost is the time the samples took (reading every node), costMax
	// the longest: the measurement's own share of the process.
	cost, costMax time.Duration
	samples       int
}

// logClaim is one permanent claim seen in a node's claim log: the same
// claim (job, client, start) at any of its nodes, released if any of
// them says so.
type logClaim struct {
	job, client string
	start       int64 // the claim's start, Unix ms on its client's clock
	released    bool
	nodes       map[string]bool // the nodes whose log holds it
}

func newSampler(n *testnet.Network, window time.Duration) *sampler {
	return &sampler{net: n, window: window, prev: map[*overlay.Metrics]map[string]float64{},
		total: map[string]float64{}, claims: map[string]*logClaim{}}
}

// stripRuntime takes the Go runtime and process collectors out of a
// node's registry before the sampler's first read of it. Every node of
// the process registers its own copy of these process-wide figures, and
// gathering them (runtime/metrics, /proc reads) costs about 15 times the
// node's own counters: 0.6 ms a node, over a second a sample at 1,000
// nodes. In-process nodes serve no /metrics, so nothing else reads them.
func stripRuntime(m *overlay.Metrics) {
	m.Registry.Unregister(collectors.NewGoCollector())
	m.Registry.Unregister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// nodeCounts reads one node's received RPCs by protocol.
func nodeCounts(m *overlay.Metrics) map[string]float64 {
	out := map[string]float64{}
	testnet.EachReceived(m, func(proto, _ string, v float64) { out[proto] += v })
	return out
}

// sample closes the second ending t s after the first submission (t 0:
// the baseline, no row).
func (s *sampler) sample(t float64, rr *realRun) {
	now := time.Now()
	defer s.account(now)
	dt := now.Sub(s.last).Seconds()
	s.last = now
	live := s.net.Live()
	seen := make(map[*overlay.Metrics]bool, len(live))
	row := SecondRow{T: t, Nodes: len(live)}
	inWindow := t <= s.window.Seconds()+0.5
	ms, curs := s.readCounters(live)
	var sum rpcGrowth
	for i, nd := range live {
		seen[ms[i]] = true
		g := s.growth(ms[i], curs[i], inWindow && t > 0)
		idx := nd.Index().Len()
		row.IndexMax = max(row.IndexMax, idx)
		row.Moves += nd.Moves()
		if dt > 0 {
			row.RPCMax = max(row.RPCMax, g.all/dt)
			row.RPCMaxNoLookup = max(row.RPCMaxNoLookup, (g.all-g.lookup)/dt)
			row.RPCMaxModelled = max(row.RPCMaxModelled, g.modelled/dt)
			if idx == 0 {
				row.RPCMaxNoIndexNoLookup = max(row.RPCMaxNoIndexNoLookup, (g.all-g.lookup)/dt)
			}
		}
		sum.all += g.all
		sum.lookup += g.lookup
		sum.modelled += g.modelled
		s.readClaimLog(nd)
	}
	for m := range s.prev {
		if !seen[m] {
			delete(s.prev, m) // killed or moved: its counters are gone
		}
	}
	if t == 0 || dt <= 0 {
		return
	}
	s.closeRow(row, sum, dt, rr)
}

// account adds the time since a sample started to the samples' cost.
func (s *sampler) account(start time.Time) {
	d := time.Since(start)
	s.cost += d
	s.costMax = max(s.costMax, d)
	s.samples++
}

// readCounters reads the live nodes' received RPCs by protocol, in
// parallel: a registry's Gather hands each collector to a goroutine, so
// on a busy process one read waits on the scheduler more than it
// computes. A node read for the first time has its runtime collectors
// stripped first.
func (s *sampler) readCounters(live []*node.Node) ([]*overlay.Metrics, []map[string]float64) {
	ms := make([]*overlay.Metrics, len(live))
	curs := make([]map[string]float64, len(live))
	for i, nd := range live {
		ms[i] = nd.Endpoint().Metrics()
		if _, known := s.prev[ms[i]]; !known {
			stripRuntime(ms[i])
		}
	}
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(16, len(live)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(ms); i = int(next.Add(1) - 1) {
				curs[i] = nodeCounts(ms[i])
			}
		}()
	}
	wg.Wait()
	return ms, curs
}

// rpcGrowth is RPCs received since the last sample: all of them, the
// lookups among them, and those of the kinds the simulator models.
type rpcGrowth struct{ all, lookup, modelled float64 }

// growth keeps a node's counters cur for the next sample and returns
// their growth since the last; with count, it also adds the growth by
// protocol to the window's totals.
func (s *sampler) growth(m *overlay.Metrics, cur map[string]float64, count bool) rpcGrowth {
	old := s.prev[m]
	s.prev[m] = cur
	var g rpcGrowth
	for proto, v := range cur {
		d := v - old[proto]
		if d <= 0 {
			continue
		}
		g.all += d
		kind := kindOf(proto)
		if kind == "lookup" {
			g.lookup += d
		}
		if modelled(kind) {
			g.modelled += d
		}
		if count {
			s.total[proto] += d
		}
	}
	return g
}

// readClaimLog merges a node's claim log into the claims seen so far.
func (s *sampler) readClaimLog(nd *node.Node) {
	for _, rec := range nd.Claims().Log() {
		k := string(rec.Job) + "\x00" + string(rec.Client) + "\x00" + strconv.FormatInt(rec.Start, 10)
		c := s.claims[k]
		if c == nil {
			c = &logClaim{job: string(rec.Job), client: string(rec.Client), start: rec.Start, nodes: map[string]bool{}}
			s.claims[k] = c
		}
		c.released = c.released || rec.Released
		c.nodes[nd.ID().String()] = true
	}
}

// closeRow completes the second's row, dt s long, with the network's
// RPC totals and means over its row.Nodes live nodes and the run's job
// counts, and appends it.
func (s *sampler) closeRow(row SecondRow, sum rpcGrowth, dt float64, rr *realRun) {
	row.TotalRPC, row.LookupRPC = sum.all/dt, sum.lookup/dt
	if n := float64(max(row.Nodes, 1)); n > 0 {
		row.RPCMean, row.RPCMeanNoLookup = sum.all/dt/n, (sum.all-sum.lookup)/dt/n
		row.RPCMeanModelled = sum.modelled / dt / n
	}
	row.Submitted, row.Claimed = int(rr.acked.Load()), int(rr.claimed.Load())
	row.Finished, row.Harvested = int(rr.finished.Load()), int(rr.harvested.Load())
	s.rows = append(s.rows, row)
}

// costFigures fills the mean and longest time a sample took.
func (s *sampler) costFigures(f *Figures) {
	if s.samples > 0 {
		f.SampleMS = float64(s.cost.Microseconds()) / 1000 / float64(s.samples)
		f.SampleMaxMS = float64(s.costMax.Microseconds()) / 1000
	}
}

// logDoubles counts the jobs whose unreleased permanent claims, over
// every claim log read during the run, name more than one client.
func (s *sampler) logDoubles() int {
	seen := make([]claimnet.Record, 0, len(s.claims))
	for _, c := range s.claims {
		seen = append(seen, claimnet.Record{Job: []byte(c.job), Record: claim.Record{Client: []byte(c.client), Released: c.released}})
	}
	return len(testnet.ClaimedTwice(seen))
}

// doubleDetail describes each job the claim logs show claimed by two
// clients at once: for each unreleased claim, its client, start and the
// nodes whose log holds it (what a trace of the double claim starts from).
func (s *sampler) doubleDetail() []string {
	twice := map[string]bool{}
	seen := make([]claimnet.Record, 0, len(s.claims))
	for _, c := range s.claims {
		seen = append(seen, claimnet.Record{Job: []byte(c.job), Record: claim.Record{Client: []byte(c.client), Released: c.released}})
	}
	for job := range testnet.ClaimedTwice(seen) {
		twice[job] = true
	}
	var out []string
	for _, c := range s.claims {
		if !twice[c.job] || c.released {
			continue
		}
		nodes := slices.Sorted(maps.Keys(c.nodes))
		for i, n := range nodes {
			nodes[i] = shortID(n)
		}
		out = append(out, fmt.Sprintf("job %x claimed twice in the nodes' logs: client %x, start %d, held by %d nodes %v",
			[]byte(c.job)[:8], []byte(c.client)[:8], c.start, len(nodes), nodes))
	}
	slices.Sort(out)
	return out
}

func shortID(s string) string { return s[max(len(s)-6, 0):] }

// perJob fills the window's RPCs per submitted job, by kind and by
// protocol, and the lookup share.
func (s *sampler) perJob(f *Figures) {
	jobs := float64(max(f.Submitted, 1))
	f.RPCsPerJob, f.ByProtocol = map[string]float64{}, map[string]float64{}
	var all float64
	for proto, v := range s.total {
		f.RPCsPerJob[kindOf(proto)] += v / jobs
		f.ByProtocol[proto] = v / jobs
		all += v
	}
	if all > 0 {
		f.LookupShare = f.RPCsPerJob["lookup"] * jobs / all
	}
}
