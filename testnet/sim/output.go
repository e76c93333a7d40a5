package sim

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"
)

// NodeLoad is one node slot's RPC load over its lifetime in the run (all
// its incarnations together).
type NodeLoad struct {
	Node   int                `json:"node"`
	Up     float64            `json:"up_s"`    // seconds alive
	Avg    float64            `json:"avg"`     // RPC/s received, averaged over Up
	ByKind map[string]float64 `json:"by_kind"` // RPC/s by kind
}

// Summary is a run's key figures. In JSON (summary.json) its keys are
// snake_case and its durations seconds, under keys ending in _s.
type Summary struct {
	Name      string        `json:"name"`
	Workload  Workload      `json:"workload"`
	Nodes     int           `json:"nodes"`
	Seed      uint64        `json:"seed"`
	Balance   bool          `json:"balance"`
	Piggyback bool          `json:"piggyback"` // balancing reacts to loads piggy-backed on replies
	CoolDown  time.Duration `json:"-"`         // balancing's cool-down
	WRate     float64       `json:"w_rate"`    // balancing's weight of one request per second
	ChurnLife time.Duration `json:"-"`
	Jobs      int           `json:"jobs"`
	Rate      float64       `json:"rate"`
	Simulated time.Duration `json:"-"`
	Wall      time.Duration `json:"-"`
	Events    uint64        `json:"events"`
	SysMiB    float64       `json:"sys_mib"` // memory the Go runtime obtained from the OS, at the end of the run
	Submitted int           `json:"submitted"`
	Claimed   int           `json:"claimed"`
	Finished  int           `json:"finished"`
	Collected int           `json:"collected"`
	Lost      int           `json:"lost"`
	Doubles   int           `json:"doubles"`
	Faults    *FaultFigures `json:"faults,omitempty"` // the fault model's figures, when a run has faults
	Moves     int           `json:"moves"`
	Reactions int           `json:"reactions"` // balances started by a load piggy-backed on a reply
	Failed    int           `json:"failed"`    // claim attempts that did not win
	// FailedBy are the failed attempts by reason, named as the real
	// run's (testnet/scenario): "claim failed" (too few grants or
	// accepted confirms), "claim lost to another client", "job unknown
	// to its nodes", "no job found" (the index query found none).
	FailedBy  map[string]int `json:"failed_by,omitempty"`
	EmptyQ    int            `json:"empty_queries"` // index queries that found nothing
	Lookups   int            `json:"lookups"`
	CacheHits int            `json:"cache_hits"`
	// PlaceLookups counts submitted jobs whose first node (the closest in
	// the project's routing table and crawled view) was not among the
	// job's r closest in its own table and looked the job up.
	PlaceLookups int `json:"place_lookups"`
	// FailedStores counts the project's stores that failed (the first node
	// left or moved since the project learnt of it, or was cut off); each
	// is followed, after the RPC time-out, by a lookup and the job's next
	// first node (Resubmitted), up to Config.FirstNodes.
	FailedStores int `json:"failed_stores"`
	// Resubmitted counts jobs the project sent again through another of
	// their closest nodes, a store having failed or come back with too
	// few signed receipts; GivenUp the submissions it gave up after
	// Config.FirstNodes first nodes (submit.go).
	Resubmitted int `json:"resubmitted"`
	GivenUp     int `json:"given_up"`
	// FailedSyncs counts node-to-node syncs (republish batches,
	// placements, pass-ons, hand-ons) whose target was gone; the sender
	// re-plans them after the RPC time-out (replica.Replan).
	FailedSyncs int `json:"failed_syncs"`
	// SkippedSyncs counts the collected states republish rounds did not
	// sync again (already synced to the same view; replica.SkipSync).
	SkippedSyncs int `json:"skipped_syncs"`
	// HandOnJobs counts the job states nodes handed on to newcomers
	// (replica.HandOnTo), one per job and newcomer.
	HandOnJobs int `json:"hand_on_jobs"`
	// RepairJobs counts the job states nodes gave to the nodes that
	// entered a job's r closest in a departed node's place
	// (replica.RepairTo), one per job and target.
	RepairJobs int `json:"repair_jobs"`
	// Resyncs counts the resyncs nodes made on clients' repair requests
	// (a failed claim attempt that found the job's closest short of it).
	Resyncs int `json:"resyncs"`
	// Crawls counts the project's crawls of the overlay; their near
	// questions are LookupRPC["crawl"].
	Crawls int `json:"crawls"`
	// StaleTargets counts region targets (index writes and queries) whose
	// node joined or moved after the party fetched its region view: the
	// real view would not know it and name an older node instead (the
	// simulator routes to the true closest; this counts what it does not
	// charge).
	StaleTargets int `json:"stale_targets"`
	// RegionTargets counts the region targets drawn (index entries placed
	// and index queries sent).
	RegionTargets int               `json:"region_targets"`
	RegionBits    int               `json:"region_bits"`  // p, bits of the keyword's index region (Config.RegionBits)
	NearRPC       uint64            `json:"near_rpc"`     // near questions (region views), counted in LookupRPC
	RPC           map[string]uint64 `json:"rpc"`          // RPCs received, by kind
	LookupRPC     map[string]uint64 `json:"lookup_rpc"`   // lookup RPCs, by what the lookup was for
	LookupShare   float64           `json:"lookup_share"` // lookup RPCs / all RPCs
	MeanRPC       float64           `json:"mean_rpc"`     // mean RPC/s per live node over the run
	MeanBW        float64           `json:"mean_bw"`      // mean bytes/s received per live node

	PeakRPCMax          float64 `json:"peak_rpc_max"`            // highest per-second RPC count on any node
	MedianRPCMax        float64 `json:"median_rpc_max"`          // median over rows of the busiest node's RPC/s
	PeakNoIndexNoLookup float64 `json:"peak_no_index_no_lookup"` // highest per-second count on a node without index entries, lookups not counted
	MedianMaxOverMean   float64 `json:"median_max_over_mean"`    // median over rows of busiest/mean RPC/s
	BusiestAvg          float64 `json:"busiest_avg"`             // busiest node's lifetime average RPC/s
	BusiestOverMean     float64 `json:"busiest_over_mean"`       // BusiestAvg / mean of the lifetime averages
	// FinalHourMaxOverMean is the median over the seconds of the last hour
	// of a dynamic workload's submissions of busiest/mean RPC/s: the load
	// balancing's steady state (0 for shorter or static runs).
	FinalHourMaxOverMean float64 `json:"final_hour_max_over_mean"`
	// WindowMaxOverMean is the median over the run's 5-minute load windows
	// of the busiest node's RPCs over the mean: the spread of the load
	// without the per-second counting noise.
	WindowMaxOverMean float64 `json:"window_max_over_mean"`
	// FinalHourWindowMaxOverMean is the same over the windows of the last
	// hour of a dynamic workload's submissions (0 for shorter or static
	// runs): the balancing's steady state.
	FinalHourWindowMaxOverMean float64 `json:"final_hour_window_max_over_mean"`
	// EvenSecondMaxOverMean and EvenWindowMaxOverMean are what
	// MedianMaxOverMean and WindowMaxOverMean would be under a perfectly
	// even load at the run's mean RPC/s and live nodes (EvenMaxOverMean):
	// the floor set by counting noise.
	EvenSecondMaxOverMean float64       `json:"even_second_max_over_mean"`
	EvenWindowMaxOverMean float64       `json:"even_window_max_over_mean"`
	Top                   []NodeLoad    `json:"top"`
	PeakJobsMax           float64       `json:"peak_jobs_max"`
	PeakIndexMax          float64       `json:"peak_index_max"`
	PeakBWMax             float64       `json:"peak_bw_max"`         // bytes/s
	ShareAtFirstMove      float64       `json:"share_at_first_move"` // busiest node's share of the index entries at the first move
	HotSpotHalvedAfter    time.Duration `json:"-"`
	HotSpotHalved         bool          `json:"hot_spot_halved"`
	FirstMove             time.Duration `json:"-"`
	AllCollected          bool          `json:"all_collected"`
}

// Rows are the run's CSV rows.
func (s *Sim) Rows() []Row { return s.rows }

// Config is the run's configuration, defaults applied.
func (s *Sim) Config() Config { return s.c }

// NodeLoads returns every node slot's lifetime load, busiest first.
func (s *Sim) NodeLoads() []NodeLoad {
	var out []NodeLoad
	for i := range s.nodes {
		n := &s.nodes[i]
		up := float64(n.upMS) / 1000
		if up <= 0 {
			continue
		}
		nl := NodeLoad{Node: i, Up: up, ByKind: map[string]float64{}}
		for k, v := range n.tot {
			nl.Avg += float64(v) / up
			nl.ByKind[kindNames[k]] = float64(v) / up
		}
		out = append(out, nl)
	}
	slices.SortStableFunc(out, func(a, b NodeLoad) int { return cmp.Compare(b.Avg, a.Avg) })
	return out
}

// Summary computes the key figures; wall is the run's wall time.
func (s *Sim) Summary(wall time.Duration) Summary {
	c := s.c
	sm := s.summaryCounts(wall)
	if c.Byzantine > 0 || c.Skewed > 0 || c.Jump > 0 {
		ff := s.faultFigures()
		sm.Faults = &ff
	}
	var mst runtime.MemStats
	runtime.ReadMemStats(&mst)
	sm.SysMiB = float64(mst.Sys) / (1 << 20)
	s.summaryRPC(&sm)
	s.summaryRows(&sm)
	s.summaryBusiest(&sm)
	s.summaryMoves(&sm)
	sm.AllCollected = c.Workload == Static && s.m.collected == c.Jobs
	return sm
}

// summaryCounts starts the summary: the run's configuration, its length
// and wall time, and the event counts of its metrics.
func (s *Sim) summaryCounts(wall time.Duration) Summary {
	c := s.c
	return Summary{Name: c.Name, Workload: c.Workload, Nodes: c.Nodes, Seed: c.Seed, Balance: c.Balance,
		Piggyback: c.Balance && !c.NoPiggyback, CoolDown: c.CoolDown, WRate: c.WRate,
		ChurnLife: c.ChurnLife, RegionBits: c.RegionBits, Jobs: c.Jobs, Rate: c.Rate, Simulated: time.Duration(s.e.now) * time.Millisecond,
		Wall: wall, Events: s.e.seq, Submitted: s.m.submitted, Claimed: s.m.claimed, Finished: s.m.finished,
		Collected: s.m.collected, Lost: s.m.lost, Doubles: s.m.doubleClaims, Moves: s.m.moves, Reactions: s.m.reactions,
		Failed: s.m.failedAttempts, FailedBy: s.m.failedBy(), EmptyQ: s.m.emptyQueries, Lookups: s.m.lookups, CacheHits: s.m.cacheHits,
		PlaceLookups: s.m.placeLookups, FailedStores: s.m.failedStores,
		Resubmitted: s.m.resubmitted, GivenUp: s.m.givenUp, FailedSyncs: s.m.failedSyncs, SkippedSyncs: s.m.skippedSyncs, HandOnJobs: s.m.handOnJobs, RepairJobs: s.m.repairJobs, Resyncs: s.m.resyncs, Crawls: s.cv.crawls, StaleTargets: s.m.staleTargets,
		RegionTargets: s.m.regionTargets,
		RPC:           map[string]uint64{}, PeakRPCMax: s.m.peakRPC, PeakNoIndexNoLookup: s.m.peakRPCNoLk}
}

// summaryRPC fills the RPC totals: by kind and by what a lookup was for,
// the near questions, the lookup share and the mean RPC/s and bytes/s
// per live node.
func (s *Sim) summaryRPC(sm *Summary) {
	var all uint64
	sm.LookupRPC = map[string]uint64{}
	for k, v := range s.m.lookupRPC {
		sm.LookupRPC[lookupWhyNames[k]] = v
		sm.NearRPC += s.m.nearRPC[k]
	}
	for k, v := range s.m.rpc {
		sm.RPC[kindNames[k]] = v
		all += v
	}
	if all > 0 {
		sm.LookupShare = float64(s.m.rpc[kLookup]) / float64(all)
	}
	if s.m.nodeSeconds > 0 {
		sm.MeanRPC = float64(all) / s.m.nodeSeconds
		sm.MeanBW = float64(s.m.bytes) / s.m.nodeSeconds
	}
}

// summaryRows fills the figures over the CSV rows and the load windows:
// peaks and medians of the busiest node, busiest over mean (over the run
// and over a dynamic run's last hour of submissions) and what an even
// load would give. It needs summaryRPC's MeanRPC.
func (s *Sim) summaryRows(sm *Summary) {
	c := s.c
	var maxes, ratios []float64
	for _, r := range s.rows {
		maxes = append(maxes, r.RPCMax)
		if r.RPCMean > 0 {
			ratios = append(ratios, r.RPCMax/r.RPCMean)
		}
		sm.PeakJobsMax = max(sm.PeakJobsMax, r.JobsMax)
		sm.PeakIndexMax = max(sm.PeakIndexMax, r.IndexMax)
		sm.PeakBWMax = max(sm.PeakBWMax, r.BWMax)
	}
	sm.MedianRPCMax, sm.MedianMaxOverMean = median(maxes), median(ratios)
	if c.Workload == Dynamic && c.Duration >= 2*time.Hour {
		from, to := (c.Duration-time.Hour).Milliseconds()/1000, c.Duration.Milliseconds()/1000
		var final []float64
		for _, r := range s.rows {
			if r.T > from && r.T <= to && r.RPCMean > 0 {
				final = append(final, r.RPCMax/r.RPCMean)
			}
		}
		sm.FinalHourMaxOverMean = median(final)
		sm.FinalHourWindowMaxOverMean = median(windowRatios(s.m.windows, from, to))
	}
	sm.WindowMaxOverMean = median(windowRatios(s.m.windows, 0, s.e.now/1000))
	if secs := float64(s.e.now) / 1000; secs > 0 {
		live := int(math.Round(s.m.nodeSeconds / secs))
		sm.EvenSecondMaxOverMean = EvenMaxOverMean(live, sm.MeanRPC)
		sm.EvenWindowMaxOverMean = EvenMaxOverMean(live, sm.MeanRPC*loadWindow)
	}
}

// summaryBusiest fills the busiest node's lifetime average, its ratio to
// the mean of the lifetime averages, and the eight busiest nodes.
func (s *Sim) summaryBusiest(sm *Summary) {
	loads := s.NodeLoads()
	if len(loads) == 0 {
		return
	}
	var sum float64
	for _, l := range loads {
		sum += l.Avg
	}
	sm.BusiestAvg = loads[0].Avg
	if mean := sum / float64(len(loads)); mean > 0 {
		sm.BusiestOverMean = loads[0].Avg / mean
	}
	sm.Top = loads[:min(8, len(loads))]
}

// summaryMoves fills the first move's time and the busiest node's index
// share then, and how long after it the hot spot halved, if it did.
func (s *Sim) summaryMoves(sm *Summary) {
	if s.m.firstMove <= 0 {
		return
	}
	sm.FirstMove = time.Duration(s.m.firstMove) * time.Millisecond
	sm.ShareAtFirstMove = s.m.shareAtMove
	if s.m.halvedAt > 0 {
		sm.HotSpotHalved = true
		sm.HotSpotHalvedAfter = time.Duration(s.m.halvedAt-s.m.firstMove) * time.Millisecond
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	return ys[len(ys)/2]
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// WriteCSV writes the per-interval rows.
func (s *Sim) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, CSVHeader)
	for _, r := range s.rows {
		fmt.Fprintf(bw, "%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d\n",
			r.T, r.Nodes, fmtF(r.RPCMean), fmtF(r.RPCMax), fmtF(r.RPCMaxNoIndex), fmtF(r.RPCMaxNoLookup),
			fmtF(r.RPCMaxNoIndexNoLookup), fmtF(r.LookupRPC), fmtF(r.TotalRPC), fmtF(r.BWMax), fmtF(r.BWMean),
			fmtF(r.JobsMax), fmtF(r.JobsMean), fmtF(r.IndexMax), fmtF(r.IndexMean), r.IndexNodes, r.IndexTotal,
			r.Moves, r.Lost, r.DoubleClaims, r.Submitted, r.Claimed, r.Finished, r.Collected)
	}
	return bw.Flush()
}

// WriteNodesCSV writes every node slot's lifetime RPC load, busiest first.
func (s *Sim) WriteNodesCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, "node,up_s,rpc_per_s")
	for _, k := range kindNames {
		fmt.Fprintf(bw, ",%s_per_s", k)
	}
	fmt.Fprintln(bw)
	for _, l := range s.NodeLoads() {
		fmt.Fprintf(bw, "%d,%s,%s", l.Node, fmtF(l.Up), fmtF(l.Avg))
		for _, k := range kindNames {
			fmt.Fprintf(bw, ",%s", fmtF(l.ByKind[k]))
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// WriteFiles writes the run's outputs into dir: metrics.csv, nodes.csv,
// summary.json and the plots.
func (s *Sim) WriteFiles(dir string, sm Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	for name, f := range map[string]func(io.Writer) error{"metrics.csv": s.WriteCSV, "nodes.csv": s.WriteNodesCSV} {
		if err := writeFile(filepath.Join(dir, name), f); err != nil {
			return err
		}
	}
	if err := writeFile(filepath.Join(dir, "summary.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sm)
	}); err != nil {
		return err
	}
	return s.Plot(dir)
}

func writeFile(path string, f func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := f(fh); err != nil {
		fh.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}
