package sim

import (
	"time"

	"github.com/up-pool/up/claim"
)

// metrics are a run's counters.
type metrics struct {
	dirty []int32 // nodes that received RPCs this second

	submitted, claimed, finished, collected int
	lost, doubleClaims, moves               int
	reactions                               int // balances started by a piggy-backed load
	failedAttempts, emptyQueries            int
	uncertifiedRefused                      int    // claimed states or tombstones refused in syncs for want of a certificate
	voided                                  int    // uncertified claims voided by the certificate watch (certwatch.go)
	outcomes                                [5]int // failed attempts by claim.Outcome
	notFound                                int    // failed attempts whose index queries found no job
	lookups, cacheHits                      int
	placeLookups                            int                // stores whose first node was not among the job's closest in its table
	failedStores                            int                // the project's stores that failed (first node gone, moved or cut off)
	shortStores                             int                // the project's stores answered with too few receipts (claim.ReceiptsNeeded) so far
	resubmitted                             int                // jobs sent again, through another first node (failed or short stores)
	givenUp                                 int                // submissions given up after Config.FirstNodes first nodes, or with no node left to try
	failedSyncs                             int                // node-to-node syncs that did not arrive (syncFailed)
	skippedSyncs                            int                // collected states a round did not sync again (syncskip.go)
	handOnJobs                              int                // job states handed on to newcomers (handOn)
	resyncs                                 int                // resyncs on clients' repair requests (resync)
	repairJobs                              int                // job states given to nodes that entered a job's r closest in a departed node's place (repair)
	regionTargets, staleTargets             int                // region targets drawn; of them, whose node is younger than the party's region view
	nearRPC                                 [nLookupWhy]uint64 // near questions (region views), part of lookupRPC
	lookupRPC                               [nLookupWhy]uint64 // lookup RPCs by purpose
	rpc                                     [nKinds]uint64
	bytes                                   uint64

	forgedRefused  int     // forged states honest nodes refused
	swallowed      int     // given-up submissions of jobs no node ever stored
	claimedJobs    int     // jobs some client won
	abandoned      int     // static: jobs unclaimed when the claim phase timed out
	doublesBeyondF int     // double claims on jobs with more than f faulty replicas
	claimLatency   []int64 // ms from a client's first query to its won claim
	claimsEnd      bool    // static: the claim phase timed out with jobs unclaimed

	firstMove            int64   // ms of the first move (0: none)
	shareAtMove          float64 // busiest node's share of all index entries then
	maxIdxAtMove         int
	halvedAt             int64 // ms when the share first fell to half of shareAtMove
	peakRSS              uint64
	nodeSeconds          float64
	peakRPC, peakRPCNoLk float64
	windows              []window // one per loadWindow, in time order
}

// loadWindow is the span, in simulated seconds, over which the busiest
// node's RPCs are set against the mean for the steady-state figure: long
// enough that a perfectly even load shows a ratio near 1 (at ~1 RPC/s per
// node a window counts ~300, so the busiest of 1,024 even nodes counts
// ~1.2× the mean), short enough to follow balancing (periods of 20-60 min).
const loadWindow = 300

// window is the RPC load over one loadWindow: the busiest live node's
// count and the mean count over the live nodes.
type window struct {
	end       int64 // s
	max, mean float64
}

func (m *metrics) lostUnclaimed() int { return m.lost + m.swallowed }

// Row is one line of the per-interval CSV: maxima over nodes and over the
// interval's seconds, means over nodes averaged over the seconds.
type Row struct {
	T                     int64   // s since the start, end of the interval
	Nodes                 int     // live nodes
	RPCMean               float64 // mean RPC/s received per live node
	RPCMax                float64 // busiest node's RPC/s
	RPCMaxNoIndex         float64 // busiest node holding no index entries
	RPCMaxNoLookup        float64 // busiest node, lookup RPCs not counted
	RPCMaxNoIndexNoLookup float64 // both exclusions (thesis Figure 4.3, right)
	LookupRPC             float64 // lookup RPC/s, whole overlay
	TotalRPC              float64 // RPC/s, whole overlay
	BWMax                 float64 // busiest node's received bytes/s
	BWMean                float64 // mean received bytes/s per live node
	JobsMax               float64 // most active (unfinished) replicas on a node
	JobsMean              float64 // mean active replicas per live node
	IndexMax              float64 // most index entries on a node
	IndexMean             float64 // mean index entries per node holding any
	IndexNodes            int     // nodes holding index entries
	IndexTotal            int     // index entries in the overlay
	Moves                 int     // load-balancing moves so far
	Lost                  int     // jobs lost so far
	DoubleClaims          int     // double claims so far
	Submitted             int
	Claimed               int
	Finished              int
	Collected             int
}

// CSVHeader is the header of the metrics CSV.
const CSVHeader = "t_s,nodes,rpc_mean,rpc_max,rpc_max_noindex,rpc_max_nolookup,rpc_max_noindex_nolookup," +
	"lookup_rpc,total_rpc,bw_max_Bps,bw_mean_Bps,jobs_max,jobs_mean,index_max,index_mean,index_nodes,index_total," +
	"moves,lost,double_claims,submitted,claimed,finished,collected"

type rowAcc struct {
	secs int
	r    Row
}

// tick closes one simulated second: the per-node RPC counts of the
// second become the row's maxima and means, then reset.
func (s *Sim) tick() {
	s.e.after(1000, event{kind: evTick})
	sec := s.drainCounts()
	if s.e.now%(loadWindow*1000) == 0 {
		s.closeWindow()
	}
	s.sampleHoldings(&sec)
	s.m.nodeSeconds += float64(sec.live)
	s.m.peakRPC = max(s.m.peakRPC, float64(sec.mx))
	s.m.peakRPCNoLk = max(s.m.peakRPCNoLk, float64(sec.mxNoIdxNoLk))
	s.trackIndexShare(sec.idxMax, sec.idxSum)
	s.accumulate(sec)
	if s.acc.secs*1000 >= int(ms(s.c.Interval)) || s.closing {
		s.flushRow(sec.live)
	}
	if s.progress != nil && s.e.now%3_600_000 == 0 {
		s.progress(Progress{Now: time.Duration(s.e.now) * time.Millisecond, Submitted: s.m.submitted,
			Collected: s.m.collected, Events: s.e.seq})
	}
}

// secondLoad is one simulated second's load over the live nodes.
type secondLoad struct {
	tot, totLk, bw                          uint64 // RPCs, lookup RPCs, bytes
	mx, mxNoLk, mxNoIdx, mxNoIdxNoLk, bwMax uint32 // busiest node, by what is counted
	live                                    int
	jobsMax, jobsSum                        int64
	idxMax, idxSum, idxNodes                int
}

// drainCounts adds the second's per-node RPC and byte counts to the
// totals and returns the second's load, resetting the counters.
func (s *Sim) drainCounts() secondLoad {
	var sec secondLoad
	for _, id := range s.m.dirty {
		n := &s.nodes[id]
		var all uint32
		for k := range n.cnt {
			all += n.cnt[k]
			n.tot[k] += uint64(n.cnt[k])
			s.m.rpc[k] += uint64(n.cnt[k])
		}
		noLk := all - n.cnt[kLookup]
		n.span += all
		sec.tot += uint64(all)
		sec.totLk += uint64(n.cnt[kLookup])
		sec.bw += uint64(n.bytes)
		s.m.bytes += uint64(n.bytes)
		sec.mx, sec.mxNoLk, sec.bwMax = max(sec.mx, all), max(sec.mxNoLk, noLk), max(sec.bwMax, n.bytes)
		if n.idx == nil || n.idx.Len() == 0 {
			sec.mxNoIdx, sec.mxNoIdxNoLk = max(sec.mxNoIdx, all), max(sec.mxNoIdxNoLk, noLk)
		}
		n.cnt, n.bytes, n.dirty = [nKinds]uint32{}, 0, false
	}
	s.m.dirty = s.m.dirty[:0]
	return sec
}

// sampleHoldings adds the live nodes' jobs and index entries to sec.
func (s *Sim) sampleHoldings(sec *secondLoad) {
	sec.live = s.rings[0].len()
	for _, id := range s.rings[0].id {
		n := &s.nodes[id]
		sec.jobsMax = max(sec.jobsMax, int64(n.active))
		sec.jobsSum += int64(n.active)
		if n.idx != nil && n.idx.Len() > 0 {
			l := n.idx.Len()
			sec.idxMax = max(sec.idxMax, l)
			sec.idxSum += l
			sec.idxNodes++
		}
	}
}

// trackIndexShare records the busiest index node's share of all entries
// at the first move, and when that share first halved.
func (s *Sim) trackIndexShare(idxMax, idxSum int) {
	if s.m.moves > 0 && s.m.firstMove == 0 {
		s.m.firstMove = s.e.now
		if idxSum > 0 {
			s.m.shareAtMove = float64(idxMax) / float64(idxSum)
			s.m.maxIdxAtMove = idxMax
		}
	}
	if s.m.firstMove > 0 && s.m.halvedAt == 0 && idxSum > 0 && float64(idxMax)/float64(idxSum) <= s.m.shareAtMove/2 {
		s.m.halvedAt = s.e.now
	}
}

// accumulate adds one second's load to the row being built.
func (s *Sim) accumulate(sec secondLoad) {
	a := &s.acc
	r := &a.r
	a.secs++
	lv := float64(max(sec.live, 1))
	r.RPCMean += float64(sec.tot) / lv
	r.RPCMax = max(r.RPCMax, float64(sec.mx))
	r.RPCMaxNoIndex = max(r.RPCMaxNoIndex, float64(sec.mxNoIdx))
	r.RPCMaxNoLookup = max(r.RPCMaxNoLookup, float64(sec.mxNoLk))
	r.RPCMaxNoIndexNoLookup = max(r.RPCMaxNoIndexNoLookup, float64(sec.mxNoIdxNoLk))
	r.LookupRPC += float64(sec.totLk)
	r.TotalRPC += float64(sec.tot)
	r.BWMax = max(r.BWMax, float64(sec.bwMax))
	r.BWMean += float64(sec.bw) / lv
	r.JobsMax = max(r.JobsMax, float64(sec.jobsMax))
	r.JobsMean += float64(sec.jobsSum) / lv
	r.IndexMax = max(r.IndexMax, float64(sec.idxMax))
	if sec.idxNodes > 0 {
		r.IndexMean += float64(sec.idxSum) / float64(sec.idxNodes)
	}
	r.IndexNodes = max(r.IndexNodes, sec.idxNodes)
	r.IndexTotal = max(r.IndexTotal, sec.idxSum)
}

// flushRow ends the row being built: means over its seconds, and the
// run's counts so far.
func (s *Sim) flushRow(live int) {
	a := &s.acc
	r := &a.r
	f := float64(a.secs)
	r.T = s.e.now / 1000
	r.Nodes = live
	r.RPCMean /= f
	r.LookupRPC /= f
	r.TotalRPC /= f
	r.BWMean /= f
	r.JobsMean /= f
	r.IndexMean /= f
	r.Moves, r.Lost, r.DoubleClaims = s.m.moves, s.m.lost, s.m.doubleClaims
	r.Submitted, r.Claimed, r.Finished, r.Collected = s.m.submitted, s.m.claimed, s.m.finished, s.m.collected
	s.rows = append(s.rows, *r)
	*a = rowAcc{}
}

// closeWindow records the busiest and mean RPC counts of the live nodes
// over the load window just ended and starts the next one.
func (s *Sim) closeWindow() {
	var mx, sum uint64
	live := 0
	for i := range s.nodes {
		n := &s.nodes[i]
		if n.alive {
			mx = max(mx, uint64(n.span))
			sum += uint64(n.span)
			live++
		}
		n.span = 0
	}
	if live > 0 && sum > 0 {
		s.m.windows = append(s.m.windows, window{end: s.e.now / 1000, max: float64(mx), mean: float64(sum) / float64(live)})
	}
}

// finished reports whether the workload is done.
func (s *Sim) finished() bool {
	now := s.e.now
	if s.c.Limit > 0 && now >= ms(s.c.Limit) {
		return true
	}
	switch s.c.Workload {
	case Static:
		return s.resultsAt > 0 && s.m.collected+s.m.lostUnclaimed()+s.m.abandoned >= s.c.Jobs
	default:
		return now >= ms(s.c.Duration)
	}
}

// start schedules the workload.
func (s *Sim) start() {
	s.e.at(1000, event{kind: evTick})
	s.e.at(ms(s.c.HarvestEvery), event{kind: evHarvest})
	switch s.c.Workload {
	case Static, Dynamic:
		s.e.at(0, event{kind: evSubmit})
		if s.c.Workload == Dynamic {
			s.claimsStarted = true
			s.e.at(ms(s.c.Lead), event{kind: evClaimStart})
		}
	case Trace:
		s.trace = newTrace(s)
		s.trace.start()
	}
	if p := s.c.Partition; p.At > 0 && p.Length > 0 && p.Fraction > 0 {
		s.e.at(ms(p.At), event{kind: evPartition, arg: 1})
	}
}

// submit is the project's submission tick (arg 1: a retry of job ev.job;
// arg 2: a trace batch arrives).
func (s *Sim) submit() {
	switch s.c.Workload {
	case Static:
		k := s.m.submitted
		if k >= s.c.Jobs {
			return
		}
		j := s.newJob(0, s.tFinish)
		s.sendJob(j)
		if k+1 < s.c.Jobs {
			s.e.at(int64(float64(k+1)*1000/s.c.Rate), event{kind: evSubmit})
		} else {
			s.claimsStarted = true
			s.e.after(ms(s.c.Gap), event{kind: evClaimStart})
			// Jobs no client can claim (faults beyond f) would hold the
			// results phase back for ever: the claim phase ends after
			// twice its nominal length and an hour.
			phase := int64(float64(s.c.Jobs) / s.c.Rate * 1000)
			s.e.after(ms(s.c.Gap)+2*phase+3_600_000, event{kind: evClaimStart, arg: 1})
		}
	case Dynamic:
		if s.e.now >= ms(s.c.Duration) {
			return
		}
		k := s.m.submitted
		j := s.newJob(ms(s.c.JobLength), s.tFinish)
		s.sendJob(j)
		s.e.at(int64(float64(k+1)*1000/s.c.Rate), event{kind: evSubmit})
	case Trace:
		s.trace.submit()
	}
}

// finish closes the books: the last (partial) row, node lifetimes.
func (s *Sim) finish() {
	s.closing = true
	s.tick()
	now := s.e.now
	for i := range s.nodes {
		if n := &s.nodes[i]; n.alive {
			n.upMS += now - n.upAt
			n.upAt = now
		}
	}
}

// failedBy names the failed attempts' reasons as the real run does.
func (m *metrics) failedBy() map[string]int {
	out := map[string]int{}
	for reason, n := range map[string]int{
		"claim failed":                 m.outcomes[claim.Failed],
		"claim lost to another client": m.outcomes[claim.Lost],
		"job unknown to its nodes":     m.outcomes[claim.Unknown],
		"no job found":                 m.notFound,
	} {
		if n > 0 {
			out[reason] = n
		}
	}
	return out
}
