package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/up-pool/up/loadbalance"
)

// RunDir is the directory name of a run inside an output directory.
func RunDir(c Config) string {
	lb := "lb-off"
	if c.Balance {
		lb = "lb-on"
	}
	return fmt.Sprintf("%s-%d-%s", c.Name, c.Nodes, lb)
}

// LoadSummaries reads every run's summary.json under dir.
func LoadSummaries(dir string) ([]Summary, []string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*", "summary.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("list runs: %w", err)
	}
	slices.Sort(paths)
	var out []Summary
	var dirs []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("read summary: %w", err)
		}
		var s Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, nil, fmt.Errorf("parse %s: %w", p, err)
		}
		out = append(out, s)
		dirs = append(dirs, filepath.Base(filepath.Dir(p)))
	}
	return out, dirs, nil
}

// thesisFigures are the thesis' chapter 4 figures for each workload, from
// the text (the plots themselves are not machine-readable).
var thesisFigures = []struct{ scenario, figure, text string }{
	{"static", "4.1", "1,024 nodes, 50,000 jobs: busiest node ~100 RPC/s in the active phases, ~20 RPC/s when quiet; 150,000 jobs ~250 RPC/s; 250,000 jobs ~400 RPC/s"},
	{"static", "4.1", "job load per node from ~50 to ~800 jobs (50,000 jobs); one node holds every \"LHC\" entry (50,000)"},
	{"static", "4.3", "estimated mean RPC/s 9–10 per node; only the two index nodes above 9 RPC/s; without index nodes 30–40 RPC/s, almost all Chord lookups; without index nodes and lookups < 9 RPC/s (< 20 in the active phases)"},
	{"static", "4.1", "bandwidth below 5 kB/s; below 1 kB/s without index nodes and lookups"},
	{"dynamic", "4.2", "1,024 nodes: busiest node 40 RPC/s at 10 jobs/s up to 100 RPC/s at 30 jobs/s (×2.5 for ×3 the rate)"},
	{"dynamic", "4.4", "without index nodes ~30 RPC/s; without index nodes and lookups ~10 RPC/s; bandwidth < 6 kB/s (< 1 kB/s without index and lookups)"},
	{"churn", "4.5, 4.6", "μ_life = μ_death = 24 h and 12 h: like Figures 4.1/4.2 with spikes when an index node crashes; more jobs per node (half the nodes down); no loss reported"},
	{"loadbalance", "4.7", "static, 50,000 jobs: 338 / 938 / 1,820 moves at 128 / 512 / 1,024 nodes; busiest node's index load halved in steps (LB period 20–60 min); RPC load lower than without balancing, but higher with more nodes (lookups after moves)"},
	{"loadbalance", "4.9, 4.10", "without lookups the index load is split close to ideal after some hours; the index node's bar evened out"},
	{"loadbalance-dynamic", "4.8, 4.11, 4.12", "dynamic 10 jobs/s: 101 / 420 / 812 moves at 128 / 512 / 1,024 nodes; most exposed node's mean load halved"},
	{"trace", "4.13, 4.14", "37 days, 1,024 nodes, churn 24 h, balancing on: ~40 RPC/s most of the time, spikes to 200 RPC/s early; without lookups the early spike is 10–20 RPC/s and the load about halved"},
}

// Target is one of issue 9's acceptance targets, evaluated on the runs.
type Target struct {
	Name   string
	Runs   string
	Value  string
	Pass   bool
	Tested bool
}

// isDyn30LB: the dynamic 30 jobs/s run with balancing on as the
// nodes run it (piggy-backed loads, the default cool-down), no churn.
func isDyn30LB(s Summary) bool {
	return s.Workload == Dynamic && s.Rate == 30 && s.Balance && s.Piggyback &&
		s.CoolDown == time.Duration(loadbalance.DefaultCoolDown)*time.Millisecond &&
		(s.WRate == 0 || s.WRate == loadbalance.DefaultWRate) && s.ChurnLife == 0
}

// Targets evaluates issue 9's targets on the runs found.
func Targets(runs []Summary) []Target {
	var ts []Target
	var at1k, at10k *Summary
	for i := range runs {
		s := &runs[i]
		if isDyn30LB(*s) && s.Nodes == 1024 {
			at1k = s
		}
		if isDyn30LB(*s) && s.Nodes >= 10_000 {
			at10k = s
		}
	}
	if at1k != nil {
		ts = append(ts,
			Target{Name: "1,024 nodes, dynamic 30 jobs/s, balancing on: busiest node's RPC/s ≤ 3× the mean (lifetime averages)",
				Runs: at1k.Name, Value: fmt.Sprintf("%.2f×", at1k.BusiestOverMean), Pass: at1k.BusiestOverMean <= 3, Tested: true},
			Target{Name: "… the same in the steady state: busiest/mean RPCs over the 5-minute windows of the last hour (median; per-second counts are noise: even at a perfectly even load their busiest/mean is the floor shown)",
				Runs: at1k.Name, Value: fmt.Sprintf("%.2f× (a perfectly even load: %.2f×); per second %.1f× (even-load floor %.1f×)",
					at1k.FinalHourWindowMaxOverMean, at1k.EvenWindowMaxOverMean, at1k.FinalHourMaxOverMean, at1k.EvenSecondMaxOverMean),
				Pass: at1k.FinalHourWindowMaxOverMean > 0 && at1k.FinalHourWindowMaxOverMean <= 3, Tested: at1k.FinalHourWindowMaxOverMean > 0},
			Target{Name: "… lookups under 20 % of all RPCs", Runs: at1k.Name,
				Value: fmt.Sprintf("%.1f %%", 100*at1k.LookupShare), Pass: at1k.LookupShare < 0.2, Tested: true},
			Target{Name: "… keyword hot spot (busiest node's share of the index) halved within 2 balancing periods (2 h) of the first move",
				Runs: at1k.Name, Value: halvedText(*at1k), Pass: at1k.HotSpotHalved && at1k.HotSpotHalvedAfter <= 2*time.Hour, Tested: true})
	} else {
		ts = append(ts, Target{Name: "1,024-node dynamic 30 jobs/s balancing targets", Runs: "(no such run: `up testnet sim --scenario loadbalance-dynamic --rate 30 --nodes 1024`)"})
	}
	churn := 0
	for _, s := range runs {
		if s.ChurnLife > 0 {
			churn++
			ts = append(ts, Target{Name: "churn: zero jobs lost and zero double claims", Runs: s.Name + fmt.Sprintf(" (%d nodes, μ %v)", s.Nodes, s.ChurnLife),
				Value: fmt.Sprintf("%d lost, %d double claims", s.Lost, s.Doubles), Pass: s.Lost == 0 && s.Doubles == 0, Tested: true})
		}
	}
	if churn == 0 {
		ts = append(ts, Target{Name: "churn: zero jobs lost and zero double claims", Runs: "(no churn run)"})
	}
	if at1k != nil && at10k != nil {
		ts = append(ts, Target{Name: "10,000 nodes: per-node load no higher than at 1,024 (mean and busiest lifetime RPC/s)",
			Runs:  at10k.Name,
			Value: fmt.Sprintf("mean %.2f vs %.2f RPC/s; busiest %.1f vs %.1f RPC/s", at10k.MeanRPC, at1k.MeanRPC, at10k.BusiestAvg, at1k.BusiestAvg),
			Pass:  at10k.MeanRPC <= at1k.MeanRPC && at10k.BusiestAvg <= at1k.BusiestAvg, Tested: true})
	} else {
		ts = append(ts, Target{Name: "10,000 nodes: per-node load no higher than at 1,024", Runs: "(needs the dynamic 30 jobs/s balancing run at 1,024 and at 10,000 nodes)"})
	}
	return ts
}

func halvedText(s Summary) string {
	if s.FirstMove == 0 {
		return "no move"
	}
	if !s.HotSpotHalved {
		return fmt.Sprintf("share %.1f %% at the first move (%v), not halved", 100*s.ShareAtFirstMove, s.FirstMove)
	}
	return fmt.Sprintf("share %.1f %% at the first move (%v), halved %v later", 100*s.ShareAtFirstMove, s.FirstMove, s.HotSpotHalvedAfter.Round(time.Second))
}

// WriteReport writes report.md for the runs under dir.
func WriteReport(dir string) error {
	runs, dirs, err := LoadSummaries(dir)
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "report.md"), func(w io.Writer) error { return Report(w, runs, dirs) })
}

// Report writes the markdown report: the runs' figures, the thesis'
// figures beside them, the targets, and the plots.
func Report(w io.Writer, runs []Summary, dirs []string) error {
	var b strings.Builder
	b.WriteString("# U.P. simulation report\n\n")
	b.WriteString("Discrete-event simulation (`testnet/sim`) of the thesis' chapter 4 experiments, driving U.P.'s pure protocol cores ")
	b.WriteString("(job merge, claim, index table, load balancer, republish plan). RPC/s are RPCs a node *received* in one simulated second; ")
	b.WriteString("\"lifetime\" figures are a node's total RPCs divided by its time alive (thesis Figure 4.3's bars). ")
	b.WriteString("Per-second busiest/mean is mostly counting noise at ~1 RPC/s per node (a perfectly even load of 1,024 nodes shows 5.5×), ")
	b.WriteString("so the steady state is also given over 5-minute windows, beside what a perfectly even load would show there. ")
	b.WriteString("Each party routes from its own modelled Kademlia table at no cost; lookups are charged only where the real code makes one, ")
	b.WriteString("at an iterative Kademlia lookup's cost (k + α·max(0, ⌈log2(N/k)⌉ − shared prefix bits) RPCs, k = 20, α = 3), cached 90 s per party.\n\n")
	b.WriteString(modelNotes)
	b.WriteString("## Runs\n\n")
	b.WriteString("| run | nodes | sim time | wall | jobs sub/claimed/collected | lost | double claims | moves | mean RPC/s | busiest node RPC/s (peak / median s) | busiest lifetime avg | busiest/mean | busiest/mean, 5-min windows (even load) | lookups | jobs/node max | index/node max | BW max B/s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, s := range runs {
		fmt.Fprintf(&b, "| [%s](%s/) | %d | %v | %v | %d / %d / %d | %d | %d | %d | %.2f | %.0f / %.0f | %.1f | %.1f× | %.1f× (%.1f×) | %.0f %% | %.0f | %.0f | %.0f |\n",
			s.Name, dirs[i], s.Nodes, s.Simulated.Round(time.Second), s.Wall.Round(time.Second), s.Submitted, s.Claimed, s.Collected,
			s.Lost, s.Doubles, s.Moves, s.MeanRPC, s.PeakRPCMax, s.MedianRPCMax, s.BusiestAvg, s.BusiestOverMean,
			s.WindowMaxOverMean, s.EvenWindowMaxOverMean, 100*s.LookupShare, s.PeakJobsMax, s.PeakIndexMax, s.PeakBWMax)
	}
	b.WriteString("\n### Where the lookup RPCs come from\n\n| run |")
	for _, n := range lookupWhyNames {
		fmt.Fprintf(&b, " %s |", n)
	}
	b.WriteString(" of them near questions | jobs placed without a lookup |")
	b.WriteString("\n|---|" + strings.Repeat("---|", len(lookupWhyNames)+2) + "\n")
	for i, s := range runs {
		var all uint64
		for _, v := range s.LookupRPC {
			all += v
		}
		fmt.Fprintf(&b, "| %s |", dirs[i])
		for _, n := range lookupWhyNames {
			fmt.Fprintf(&b, " %.0f %% |", 100*float64(s.LookupRPC[n])/float64(max(all, 1)))
		}
		fmt.Fprintf(&b, " %.0f %% | %.0f %% |", 100*float64(s.NearRPC)/float64(max(all, 1)),
			100*(1-float64(s.PlaceLookups)/float64(max(s.Submitted, 1))))
		b.WriteString("\n")
	}
	b.WriteString("\n## Beside the thesis\n\n| thesis figure | scenario | thesis (chapter 4 text) | U.P. (runs above) |\n|---|---|---|---|\n")
	for _, f := range thesisFigures {
		var ours []string
		for i, s := range runs {
			if runScenario(s) == f.scenario {
				ours = append(ours, fmt.Sprintf("%s: busiest %.0f RPC/s peak, %.0f median; mean %.2f; lookups %.0f %%; w/o index & lookups peak %.0f; jobs/node ≤ %.0f; index/node ≤ %.0f; %d moves; BW ≤ %.1f kB/s ([plots](%s/overview.png))",
					dirs[i], s.PeakRPCMax, s.MedianRPCMax, s.MeanRPC, 100*s.LookupShare, s.PeakNoIndexNoLookup, s.PeakJobsMax, s.PeakIndexMax, s.Moves, s.PeakBWMax/1000, dirs[i]))
			}
		}
		if len(ours) == 0 {
			ours = []string{"(not run)"}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.figure, f.scenario, f.text, strings.Join(ours, "<br>"))
	}
	b.WriteString("\n## Targets (issue 9)\n\n| target | run | value | result |\n|---|---|---|---|\n")
	for _, t := range Targets(runs) {
		res := "not tested"
		if t.Tested {
			res = "**fail**"
			if t.Pass {
				res = "pass"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Name, t.Runs, t.Value, res)
	}
	b.WriteString("\n## Plots\n\n")
	for i, s := range runs {
		fmt.Fprintf(&b, "### %s (%d nodes)\n\n![overview](%s/overview.png)\n![rpc](%s/rpc.png)\n![bars](%s/bars.png)\n\n", s.Name, s.Nodes, dirs[i], dirs[i], dirs[i])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// runScenario names the thesis scenario a run corresponds to.
func runScenario(s Summary) string {
	switch {
	case s.Workload == Trace:
		return "trace"
	case s.ChurnLife > 0:
		return "churn"
	case s.Balance && s.Workload == Dynamic:
		return "loadbalance-dynamic"
	case s.Balance:
		return "loadbalance"
	}
	return string(s.Workload)
}

// modelNotes documents the simulator's modelling decisions in the report.
const modelNotes = `## Model

- **Overlay**: node positions are sha256 of synthetic peer IDs on the 256-bit XOR keyspace; a move takes a random
  point of the target region (identity grinding costs no simulated time).
- **Routing tables**: every party (each node incarnation, the project) has a Kademlia table like kad-dht's: bucket b
  holds nodes sharing exactly b leading bits with it. A bucket whose subtree holds m ≤ k = 20 live nodes knows all of
  them (a party knows its neighbourhood completely); a larger one knows each node with probability k/m, decided by a
  hash of the two identities and the seed (a fixed uniform sample of k nodes on average). Tables are not stored but
  decided on demand, so 10,000 nodes cost no memory for them; they follow the ring at once (a node that leaves or moves
  drops out of every table and its bucket's others stand in: kad-dht's refresh taken as instant). The project's table
  (asked once per job) is materialised and rebuilt when the ring changes.
- **Crawl** (dht.Crawl, the accelerated client): before sending a job, a project whose crawled view is 10 min old
  crawls the overlay: level by level from the whole keyspace, each region is asked (one near question for 20 peers,
  counted as lookup RPCs under "crawl") of the known node nearest its first point, and both halves of a region whose
  answer lay wholly inside it are asked next; it finds every live node with about N/7 near questions. The view keeps
  the identities and positions found then: a node that moved or joined since is unknown until the next crawl, and
  one that left or moved (a move is a new identity) still draws jobs, whose store fails, after the 5 s time-out the
  project marks it dead (skipped 30 s, doubling up to 16×, as dht.MarkDead) and looks the job up. The crawl takes
  no simulated time.
- **What costs a lookup** (as in the real code): a decision from a party's own table costs nothing. The project sends
  each job to the closest node of its table and its crawled view (project.firstNode), a lookup only after a failed
  store. That node places the job on the r closest of its own table if it is among them (pool placement), else it
  looks the job up, pushes it to the r closest and forgets it. Index writers and client gateways keep a region view
  per keyword for 5 min (indexclient.Regions): a walk of near questions to a random point of the region (dht.Walk,
  about log2(N)/log2(20) + 1 questions, the last to the node nearest that point); when the region holds ≥ 20 nodes (crowded), a target point outside
  every sub-region a near answer showed in full costs one more near question. The simulator then sends to the true
  closest node; a target whose node joined or moved after the view was fetched is counted as stale (the real view
  would name an older node). Claims use the replica set the index entry carries (no lookup); results go to the
  claim's nodes, a lookup only when none of them holds the job; the harvest fetches from the replicas the entry names,
  a lookup only when it names none. Republish, writer and claim-check decisions about a node's own neighbourhood use the true
  closest nodes, which its table holds. Near questions are counted as lookup RPCs.
- **Lookup cost**: an iterative Kademlia lookup (GetClosestPeers with its follow-up) by a party sharing c leading bits
  with the key: h = max(0, ⌈log2(N/k)⌉ − c) hops, k + α·h RPCs (α = 3; from a random party 38 at 1,024 nodes, 47 at
  10,000; from inside the key's neighbourhood k = 20), k of them on the key's k closest nodes and α per hop on random
  nodes sharing ever longer prefixes with the key; latency (h+1) round trips. A party's lookup of the same key within
  90 s is free (the lookup cache). Routing itself is exact: a lookup returns the true closest live nodes (on the
  requester's side of a partition).
- **Network**: one-way latency lognormal, median 80 ms, σ 0.6, clipped to [8 ms, 2 s]; optional drop probability and a
  two-sided partition. RPCs are counted where they are received, by kind (lookup, job, index, claim, lb), with modelled
  sizes (lookup 600 B, job 1,500 B, state 120 B, index entry 300 B, result 2 KiB, 64 B per RPC).
- **Protocols**: job states merge with job.Merge/Expire; republish rounds are planned by replica.PlanRound (closest syncs
  the other r−1, the others sync the closest, a copy outside the r closest hands its state on and is dropped once that
  sync took it; one batched RPC per peer; a collected job synced to the same view is skipped but in every 4th round,
  replica.SkipSync), a sync whose target is gone is re-planned by replica.Replan after the 5 s
  time-out, a node hands a newcomer the jobs replica.HandOnTo names, and a crashed node's place among a job's r closest is filled by its closest live node (replica.RepairTo); claims are claim.Driver against claim.Decide /
  CheckConfirm / Release at the replicas; each job's closest node keeps its entries by index.Desired and
  index.Reconcile, at a random point of the p-bit wildcard region (p = 4 unless --region-bits), batched per index node
  per 10 s writer tick, rewritten every 10–15 min, withdrawn on claim;
  index nodes are index.Tables (Select among the oldest l with 2 min quarantine, 16 min expiry); the project pages the
  finished region every 30 s, fetches each result and sends "collected"; load balancing is loadbalance.Decide on a
  random key's closest node every 20–60 min, the lighter node landing in loadbalance.SplitFrom's region beyond the heavy
  node's nearest neighbour, handing its jobs to their next closest and its entries on, the heavy node handing it the
  entries it is now closer to.
- **Clients** sit outside the overlay and use a random live node as gateway (its lookup cache and region views). Static and dynamic
  workloads are open-loop (claim attempts at the submission rate, a failed attempt retried up to 5 times); the trace
  has a closed population of clients that poll every 10 min when idle.
- **Churn**: exponential lifetimes and down times; a node that comes back is a new node (new identity, no data).
- **Ground truth**: a job is *lost* when no live node holds a replica before the project collected it; a *double claim*
  is a client winning a claim while another client's claim on the job is still live (not finished, released or lapsed).

`
