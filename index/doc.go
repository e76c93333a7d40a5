// Package index is the pure core of U.P.'s keyword index (thesis 3.3): the
// boolean query language evaluated as a local join on one node's entries,
// the per-node entry table with selection among the oldest l entries,
// quarantine of served entries, expiry and paging for harvests, the
// estimators that size l from the observed query rate and withdraw delay,
// the planner that walks all nodes of a wildcard region, the region views
// a party targets writes and queries from (RegionViews, whose shell is
// indexclient.Regions), and the writer's reconcile. No I/O, no clock:
// time comes in as Unix milliseconds, randomness as a seeded source.
package index
