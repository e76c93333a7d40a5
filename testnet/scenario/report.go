package scenario

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// metric is one row of the side-by-side table: its name and its value
// on one side ("" when the side does not measure it).
type metric struct {
	name string
	val  func(f Figures) string
}

func fnum(v float64, prec int) string { return strconv.FormatFloat(finite(v), 'f', prec, 64) }

func fsec(d time.Duration) string { return fnum(d.Seconds(), 1) }

func fint(v int) string { return strconv.Itoa(v) }

// fopt is v, or "n/a" when the side does not measure it (-1).
func fopt(v int) string {
	if v < 0 {
		return "n/a"
	}
	return strconv.Itoa(v)
}

var scenarioMetrics = []metric{
	{"run length (s; real wall, sim virtual)", func(f Figures) string { return fsec(f.Span) }},
	{"RPC window (s)", func(f Figures) string { return fsec(f.Window) }},
	{"nodes at the start", func(f Figures) string { return fint(f.NodesStart) }},
	{"nodes at the end", func(f Figures) string { return fint(f.NodesEnd) }},
	{"jobs submitted (r acks), within the window", func(f Figures) string { return fint(f.SubmittedInWindow) }},
	{"jobs submitted (r acks), by the end", func(f Figures) string { return fint(f.Submitted) }},
	{"claims won, within the window", func(f Figures) string { return fint(f.ClaimedInWindow) }},
	{"claims won, by the end", func(f Figures) string { return fint(f.Claimed) }},
	{"results sent, within the window", func(f Figures) string { return fint(f.FinishedInWindow) }},
	{"results sent, by the end", func(f Figures) string { return fint(f.Finished) }},
	{"harvested, within the window", func(f Figures) string { return fint(f.HarvestedInWindow) }},
	{"harvested, by the end", func(f Figures) string { return fint(f.Harvested) }},
	{"jobs lost (real: submitted, never harvested; sim: no replica left)", func(f Figures) string { return fint(f.Lost) }},
	{"… of them no live replica", func(f Figures) string { return fopt(f.LostNoReplica) }},
	{"double claims (clients' view)", func(f Figures) string { return fint(f.DoubleClaims) }},
	{"jobs with 2+ clients in the nodes' claim logs", func(f Figures) string { return fopt(f.LogDoubles) }},
	{"moves", func(f Figures) string { return fint(f.Moves) }},
	{"balances started by piggy-backed loads", func(f Figures) string { return fopt(f.Reactions) }},
	{"load figure at the end: rate term (WRate·RPC/s) median / largest; items term largest", func(f Figures) string {
		if f.Side == "sim" || f.RateTermMax == 0 && f.ItemTermMax == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%s / %s; %s", fnum(f.RateTermMedian, 0), fnum(f.RateTermMax, 0), fnum(f.ItemTermMax, 0))
	}},
	{"failed claim attempts", func(f Figures) string { return fint(f.FailedAttempts) }},
	{"… by reason", func(f Figures) string {
		if len(f.FailedBy) == 0 {
			return "none"
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(f.FailedBy)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, f.FailedBy[k]))
		}
		return strings.Join(parts, "; ")
	}},
	{"lookup RPCs sent per job, by purpose", func(f Figures) string {
		if len(f.LookupBy) == 0 {
			return "none"
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(f.LookupBy)) {
			parts = append(parts, fmt.Sprintf("%s %s", k, fnum(f.LookupBy[k], 1)))
		}
		return strings.Join(parts, "; ")
	}},
	{"mean RPC/s per node", func(f Figures) string { return fnum(f.MeanRPC, 2) }},
	{"mean RPC/s per node, without lookups", func(f Figures) string { return fnum(f.MeanRPCNoLookup, 2) }},
	{"busiest node RPC/s, peak second", func(f Figures) string { return fnum(f.PeakMax, 0) }},
	{"busiest node RPC/s, median second", func(f Figures) string { return fnum(f.MedianMax, 0) }},
	{"busiest node RPC/s without lookups, peak second", func(f Figures) string { return fnum(f.PeakMaxNoLookup, 0) }},
	{"busiest node RPC/s without lookups, median second", func(f Figures) string { return fnum(f.MedianMaxNoLookup, 0) }},
	{"busiest / mean, median second", func(f Figures) string { return fnum(f.MedianMaxOverMean, 1) }},
	{"mean RPC/s per node, simulated kinds only (no hellos, CRL)", func(f Figures) string { return fnum(f.MeanRPCModelled, 2) }},
	{"busiest node RPC/s, simulated kinds only, peak second", func(f Figures) string { return fnum(f.PeakMaxModelled, 0) }},
	{"busiest node RPC/s, simulated kinds only, median second", func(f Figures) string { return fnum(f.MedianMaxModelled, 0) }},
	{"lookup share of all RPCs (%)", func(f Figures) string { return fnum(100*f.LookupShare, 1) }},
	{"RPCs per job: all", func(f Figures) string {
		var s float64
		for _, v := range f.RPCsPerJob {
			s += v
		}
		return fnum(s, 1)
	}},
	{"RPCs per job: lookup", func(f Figures) string { return fnum(f.RPCsPerJob["lookup"], 1) }},
	{"RPCs per job: job (store, sync, get, result, collect)", func(f Figures) string { return fnum(f.RPCsPerJob["job"], 1) }},
	{"RPCs per job: index (write, withdraw, query)", func(f Figures) string { return fnum(f.RPCsPerJob["index"], 1) }},
	{"RPCs per job: claim (claim, confirm, release)", func(f Figures) string { return fnum(f.RPCsPerJob["claim"], 1) }},
	{"RPCs per job: load balancing", func(f Figures) string { return fnum(f.RPCsPerJob["lb"], 2) }},
	{"RPCs per job: ping (liveness probes of republish rounds, and on the real side of index-writer rounds)", func(f Figures) string {
		return fnum(f.RPCsPerJob["ping"], 2)
	}},
	{"RPCs per job: other (hello, CRL; not simulated)", func(f Figures) string {
		if f.Side == "sim" {
			return "n/a"
		}
		return fnum(f.RPCsPerJob["other"], 2)
	}},
	{"index entries on the busiest node, peak", func(f Figures) string { return fnum(f.PeakIndexMax, 0) }},
	{"wall time, setup included (s)", func(f Figures) string { return fnum(f.Wall.Seconds(), 2) }},
	{"one reading of every node's counters: mean / longest (ms)", func(f Figures) string {
		if f.Side == "sim" {
			return "n/a"
		}
		return fnum(f.SampleMS, 1) + " / " + fnum(f.SampleMaxMS, 0)
	}},
	{"process peak RSS (MiB)", func(f Figures) string {
		if f.Side == "sim" {
			return "n/a"
		}
		return fnum(f.PeakRSSMiB, 0)
	}},
}

// columns lists the report's columns: (run, side) pairs.
func (r Report) columns() (names []string, figs []Figures) {
	for _, run := range r.Runs {
		tag := ""
		if run.Variant != "" {
			tag = " (" + run.Variant + ")"
		}
		names = append(names, "real"+tag, "sim"+tag)
		figs = append(figs, run.Real, run.Sim)
	}
	return names, figs
}

// Markdown is the report: both sides' figures in one table, the
// parameters they ran, the real run's RPCs by protocol, and what the two
// cannot be compared on.
func (r Report) Markdown() string {
	var b strings.Builder
	r.writeIntro(&b)
	r.writeFigures(&b)
	r.writeParameters(&b)
	r.writeByProtocol(&b)
	b.WriteString("\n## Where the two cannot be compared\n\n")
	for _, n := range scenarioNotes(r) {
		b.WriteString("- " + n + "\n")
	}
	r.writeErrors(&b)
	return b.String()
}

// writeIntro writes the report's title and the paragraph on the scenario
// it ran: nodes, r, seed, the workload, churn, the balancing variants,
// the scale and the wall time.
func (r Report) writeIntro(b *strings.Builder) {
	o := r.Options
	fmt.Fprintf(b, "# Scenario `%s`: real nodes beside the simulator\n\n", o.Scenario)
	fmt.Fprintf(b, "%d nodes, r = %d, seed %d; ", o.Nodes, o.R, o.Seed)
	if o.dynamic() {
		fmt.Fprintf(b, "dynamic workload: %g jobs/s submitted for %v, claims from %v on at the same rate, each job %v long", o.Rate, o.Duration, o.Lead, o.JobLength)
	} else {
		fmt.Fprintf(b, "static workload: %d jobs at %g jobs/s, %v gap, claims at %g/s, %v idle, results at %g/s", o.Jobs, o.Rate, o.Gap, o.Rate, o.RunIdle, o.Rate)
	}
	if o.churn() {
		fmt.Fprintf(b, "; churn: mean lifetime and down time %v", o.ChurnLife)
	}
	if o.Scenario == "loadbalance" {
		b.WriteString("; run twice, load balancing off and on")
	}
	fmt.Fprintf(b, ". Protocol periods are the production ones divided by %g. The real side is %d nodes of the full stack on mocknet in one process with %d client parties; the simulator (`testnet/sim`) ran the same scenario with the same parameters. Total wall time %v.\n\n",
		o.Scale, o.Nodes, o.Clients, r.Wall.Round(time.Second))
}

// writeFigures writes the side-by-side table of scenarioMetrics, a
// column per run and side, and what its RPC figures count.
func (r Report) writeFigures(b *strings.Builder) {
	names, figs := r.columns()
	b.WriteString("| metric | " + strings.Join(names, " | ") + " |\n|---|" + strings.Repeat("---|", len(names)) + "\n")
	for _, m := range scenarioMetrics {
		b.WriteString("| " + m.name + " |")
		for _, f := range figs {
			b.WriteString(" " + m.val(f) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\nRPC figures count the RPCs nodes received, per second, over the window: the whole run for static workloads, the submission time for dynamic ones (the simulator stops there; the real run then drains: claims and results go on until every job is harvested or nothing moves for a while, and its job counts are at the end of the drain).\n\n")
}

// writeParameters writes the protocol parameters both sides ran beside
// the production ones.
func (r Report) writeParameters(b *strings.Builder) {
	p := r.Periods
	b.WriteString("## Protocol parameters (both sides)\n\n| parameter | production | here |\n|---|---|---|\n")
	for _, row := range [][3]string{
		{"republish interval", "20–30 min", fmt.Sprintf("%v–%v", p.RepublishMin, p.RepublishMax)},
		{"T_rewrite", "10–15 min", fmt.Sprintf("%v–%v", p.RewriteMin, p.RewriteMax)},
		{"index writer tick", "10 s", p.WriterTick.String()},
		{"index entry expiry", "16 min", p.IndexExpiry.String()},
		{"index quarantine", "2 min", p.Quarantine.String()},
		{"replica expiry", "1 h", p.ReplicaExpiry.String()},
		{"T_collect", "2 h", p.TCollect.String()},
		{"expiry sweeps", "10 s / 30 s", p.ExpirySweep.String()},
		{"T_claim", "15 s", p.TClaim.String()},
		{"T_cert", "1 min", p.TCert.String()},
		{"T_finish", "static 48 h, dynamic 4 × job length", p.TFinish.String()},
		{"balancing interval", "20–60 min", fmt.Sprintf("%v–%v (%s)", p.BalanceMin, p.BalanceMax, onOff(r))},
		{"balancing cool-down", "21 min", p.CoolDown.String()},
		{"lookup cache", "90 s", p.LookupCache.String()},
		{"region view TTL", "5 min", p.RegionTTL.String()},
		{"project harvest interval", "30 s (simulator)", p.HarvestEvery.String()},
		{"kad-dht α, k", "10, 20", "10, 20"},
	} {
		fmt.Fprintf(b, "| %s | %s | %s |\n", row[0], row[1], row[2])
	}
}

// writeByProtocol writes the real runs' RPCs per job by protocol, a
// column per run, the protocols sorted.
func (r Report) writeByProtocol(b *strings.Builder) {
	b.WriteString("\n## Real runs: RPCs per job by protocol\n\n| protocol |")
	var protos []string
	seen := map[string]bool{}
	for _, run := range r.Runs {
		for k := range run.Real.ByProtocol {
			if !seen[k] {
				seen[k] = true
				protos = append(protos, k)
			}
		}
		fmt.Fprintf(b, " real%s |", suffix(run.Variant))
	}
	sort.Strings(protos)
	b.WriteString("\n|---|" + strings.Repeat("---|", len(r.Runs)) + "\n")
	for _, k := range protos {
		fmt.Fprintf(b, "| `%s` (%s) |", k, kindOf(k))
		for _, run := range r.Runs {
			fmt.Fprintf(b, " %s |", fnum(run.Real.ByProtocol[k], 2))
		}
		b.WriteString("\n")
	}
}

// writeErrors writes a section per real run that saw errors, one error
// a line.
func (r Report) writeErrors(b *strings.Builder) {
	for _, run := range r.Runs {
		if len(run.Real.Errors) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n## Errors seen by the real run%s\n\n", suffix(run.Variant))
		for _, e := range run.Real.Errors {
			b.WriteString("- " + strings.ReplaceAll(e, "\n", " ") + "\n")
		}
	}
}

func onOff(r Report) string {
	on := false
	for _, run := range r.Runs {
		on = on || run.Balance
	}
	if !on {
		return "off"
	}
	if len(r.Runs) > 1 {
		return "off, then on"
	}
	return "on"
}

// scenarioNotes are the report's caveats.
func scenarioNotes(r Report) []string {
	o := r.Options
	notes := []string{
		fmt.Sprintf("**Time.** Both sides run the production protocol periods divided by %g with the workload's own times (rates, gaps, job lengths) as given, so the per-second figures mean the same thing, but neither is the thesis' setting: republish, rewrite and expiry traffic per job is about %g× what production periods would cause relative to the workload. Periods that bound round trips rather than pace the protocol are floored (T_claim ≥ 3 s, writer tick, expiry sweeps and harvest interval ≥ 1 s).", o.Scale, o.Scale),
		"**Seconds.** The real side's seconds are wall seconds, sampled by a 1 s ticker that reads every node's counters (a node's count between the last sample and its crash or move is lost); the simulator's are virtual seconds, exact. With many nodes on few cores the real nodes queue work: the real run may fall behind the offered rate (compare the jobs submitted) and its peaks are smeared over neighbouring seconds.",
		"**Lookups.** The simulator charges an iterative lookup the modelled cost k + α·h (α = 10, k = 20 as kad-dht here) and a near question per region-view step; the real count is every kad-dht request a node served plus every near question (`/up/near`). The real nodes' routing tables are filled directly at the start and kad-dht's refresh is off (the simulator takes refresh as instant); a node that joins looks its own position up (node.Join) and one that restarts asks the nearest peer it remembers one near question (node.refreshNeighbours), on both sides (purpose \"join\").",
		fmt.Sprintf("**Clients.** The simulator's clients are open-loop, a fresh client per attempt using a random live node as gateway (its lookup cache and region views); the real run's attempts (%g a second, each retried up to five times a second apart, like the simulator's) take turns on %d client parties with their own caches and region views. A client fetches the job's spec from a replica after winning its claim (`/up/job/get`) and sends the claim's certificate to every node that answered; both sides count both.", o.Rate, o.Clients),
		"**Latency.** Mocknet links have none; the simulator was given a 2 ms median (lognormal σ 0.6). Neither has wide-area latency, so claim races are rarer than in the thesis' setting.",
		"**Pings and other RPCs.** The real nodes' liveness probes (`/up/ping`: every republish round and every index-writer tick (a full round) pings the peers it relies on, once each, unless it heard from them within 30 s): the simulator models the republish rounds' (`sim.Config.ProbeFresh`, heard from its syncs and index writes), not the writer's. Admission hellos and CRL fetches exist only on the real side: included in its all-RPC figures, left out of the \"simulated kinds only\" rows. The writer's probes come once per tick, and the tick is floored at 1 s here (10 s in production), so they weigh more against the wall second than in production, and less against the scaled protocol periods.",
		"**Harvest.** The simulator's project pages the finished region and fetches each result; the real project does the same with `project.Harvest` and validates each unit in its ledger. The real side's \"harvested\" are results recorded in the ledger, the simulator's are jobs collected.",
	}
	if o.churn() {
		notes = append(notes, "**Churn.** A real node that comes back is the same node restarted: same identity, same position, its store and claim log kept (`Network.Restart`). So does the simulator's (`ChurnRestart`: its jobs and claim log kept, its index entries and caches not). Lost jobs are counted differently: the real ones are jobs the ledger holds as submitted and never harvested by the end, the simulator's are jobs whose every replica was gone before collection (a down node's replicas still count). A message to a down node fails at once on the real side (a killed mocknet node's links are cut) and after the RPC time-out (5 s) in the simulator, as a dial to a powered-off machine would on the internet: claims over replica sets holding down nodes take longer there, their entries stay quarantined meanwhile, and the other clients' searches come back empty — most of the simulator's extra \"no job found\" under churn (at 128 nodes and 30 s lifetimes, 582–2,374 failed attempts over seeds 1–10 with 5 s, 12–467 with 200 ms).")
	}
	if o.Scenario == "loadbalance" {
		notes = append(notes, "**Balancing.** A real move grinds a new identity (at most 24 prefix bits here, so deeper splits are skipped) and restarts the node's network stack; the simulator's costs nothing. Real nodes also balance when a load piggy-backed on another RPC shows a node far off (\"balances started by piggy-backed loads\"), and when nudged; the simulator models neither. Both weigh a node's request rate into its load figure (WRate 10 per RPC/s against ΔL_trivial 100), but with the periods divided by the scale every node's maintenance traffic, and on the real side its pings, are that many times the production rates, so the rate term can outweigh the index and job terms (see the load-figure row) and rate differences alone can start moves: the real move count is then not a measure of the index hot spot.")
	}
	return notes
}

// WriteCSV writes the side-by-side table: variant, metric, then one
// column per side.
func (r Report) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "variant,metric,real,sim")
	for _, run := range r.Runs {
		for _, m := range scenarioMetrics {
			fmt.Fprintf(bw, "%s,%s,%s,%s\n", csvField(run.Variant), csvField(m.name), csvField(m.val(run.Real)), csvField(m.val(run.Sim)))
		}
	}
	return bw.Flush()
}

// WriteSeriesCSV writes every second of every run, both sides.
func (r Report) WriteSeriesCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "variant,side,t_s,nodes,rpc_mean,rpc_mean_nolookup,rpc_max,rpc_max_nolookup,rpc_max_noindex_nolookup,lookup_rpc,total_rpc,index_max,moves,submitted,claimed,finished,harvested")
	for _, run := range r.Runs {
		for _, side := range []struct {
			name string
			rows []SecondRow
		}{{"real", run.RealRows}, {"sim", run.SimRows}} {
			for _, x := range side.rows {
				fmt.Fprintf(bw, "%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%d,%d,%d,%d,%d,%d\n", csvField(run.Variant), side.name,
					fnum(x.T, 2), x.Nodes, fnum(x.RPCMean, 3), fnum(x.RPCMeanNoLookup, 3), fnum(x.RPCMax, 1), fnum(x.RPCMaxNoLookup, 1),
					fnum(x.RPCMaxNoIndexNoLookup, 1), fnum(x.LookupRPC, 1), fnum(x.TotalRPC, 1), x.IndexMax, x.Moves,
					x.Submitted, x.Claimed, x.Finished, x.Harvested)
			}
		}
	}
	return bw.Flush()
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// WriteFiles writes report.md, compare.csv (the side-by-side table) and
// series.csv (every second, both sides) into dir.
func (r Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create the output directory: %w", err)
	}
	for name, f := range map[string]func(io.Writer) error{
		"report.md":   func(w io.Writer) error { _, err := io.WriteString(w, r.Markdown()); return err },
		"compare.csv": r.WriteCSV,
		"series.csv":  r.WriteSeriesCSV,
	} {
		path := filepath.Join(dir, name)
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
	}
	return nil
}
