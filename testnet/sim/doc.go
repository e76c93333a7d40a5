// Package sim is U.P.'s discrete-event simulator (issue 9, docs/design.md
// "Testing and simulation", level 3): it reproduces the thesis' chapter 4
// experiments — static, dynamic, churn, load balancing and an LHC@home-like
// trace — with 1,000 to 10,000 simulated nodes in one process.
//
// It owns only the world around the protocols: a virtual clock and an event
// heap (engine.go), one seeded PCG source for every random choice (a run
// replays exactly from its seed), a model of the overlay (node positions on
// the 256-bit XOR keyspace; a Kademlia routing table per party, k-buckets
// decided on demand from the seed, so a party knows its own neighbourhood
// completely and far regions by a sample of about k nodes: rtable.go; and
// the RPC cost of an iterative Kademlia lookup with a 90 s lookup cache:
// overlay.go). Routing decisions follow the real stack: the project
// crawls the overlay every 10 min (dht.Crawl's near questions; crawl.go)
// and sends each job to the closest node in its own table and that
// crawled, possibly stale, view (no RPC), that node places it from its
// table when it is among the job's closest and looks it up only when it
// is not; index writers and client gateways keep region views for 5 min
// (a walk of near questions to the region, indexnet's rules); claims
// use the replica set the index entry carries; results and harvests go to
// the claim's or the entry's nodes, with a lookup only when none is left.
// Around them are a
// network model (lognormal wide-area latency, drops, a two-sided partition)
// and churn (exponential lifetimes and down times). Every protocol decision
// is made by the pure cores the nodes run: job.Receive and job.Lapse (on each
// node's own clock, fault.go) for
// replica states; replica.PlanRound for republish rounds, replica.Replan
// for a sync whose target is gone and replica.HandOnTo for newcomers
// (republish.go), replica.RepairTo for a crashed node's place
// (repair.go); claim.Server for the node side of claims (claim.Decide,
// claim.CheckConfirm and the post-merge check, as claimnet steps it),
// claim.Release and claim.Driver for the client's; index.Table (Put,
// Select with quarantine, Withdraw, Expire, Page) at index nodes and
// index.Desired and index.Reconcile for the writers (writer.go); and for
// load balancing the controller every node steps (loadbalance.Controller:
// probes, reactions to piggy-backed loads, rate, cool-downs, the
// grind-bits gate, around loadbalance.Decide) with Weighted, SplitFrom and
// MinSplitBit for the heavy node's answer. What the simulator still
// decides its own way: liveness is the ring (the nodes probe), a job has
// one writer record (the newest writer's), and only its closest lists it
// (the nodes add backup listers).
//
// A run counts, per simulated second, the RPCs each node receives by kind
// (lookup, job, index, claim, load balancing) and the bytes, and keeps the
// maxima and means over nodes (all nodes, without index nodes, without
// lookups), job and index load, moves, lost jobs and double claims. The
// output is a CSV, PNG plots laid out like thesis Figures 4.1–4.14 and a
// markdown report beside the thesis' figures (output.go, plot.go,
// report.go). `up testnet sim` runs it.
package sim
