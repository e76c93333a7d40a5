// Package indexnet is the network shell of U.P.'s keyword index: the index
// server a node runs (write, withdraw and query protocols around an
// index.Table, with listing verification), the cache of region views, and
// the client side every party uses (Find a job by query, Harvest all
// entries of a keyword region). The writer that keeps a node's own jobs
// listed is package indexwriter: it reads the node's pool, which clients
// and projects, linking this package, do not carry.
package indexnet

import "time"

// Config gathers the index settings of a party.
type Config struct {
	// Server tunes a node's index server.
	Server ServerConfig
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
