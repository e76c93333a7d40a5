// Package indexclient is the client side of U.P.'s keyword index, which
// every party (node, client, project) uses: the cache of wildcard region
// views (Regions: which nodes hold a keyword's region, found by a walk of
// near questions; the shell of index.RegionViews, which decides them) and
// the Client that finds a worker's jobs (Find, FindSkipping) and harvests
// a keyword region's entries (Harvest). The index server a node runs is
// package indexnet; this package links no server, pool or store, so
// agents, clients and projects carry none.
package indexclient

import "time"

// Config gathers the client-side index settings of a party.
type Config struct {
	// Seed seeds the party's random choices of region points (a node's
	// writer has its own, indexwriter.Config.Seed). Default 1.
	Seed uint64
	// RegionBits is p, the bits a wildcard region shares with its
	// keyword's centre. Default DefaultRegionBits (4).
	RegionBits int
	// RegionTTL is how long a region view is reused. Default
	// DefaultRegionTTL (5 min).
	RegionTTL time.Duration
	// FindTries is how many random points a Find asks. Default 3.
	FindTries int
}
