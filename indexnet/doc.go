// Package indexnet is the network shell of U.P.'s keyword index: the index
// server a node runs (write, withdraw and query protocols around an
// index.Table, with listing verification), the writer that keeps a node's
// jobs listed (entries written by each job's closest node to random points
// of the keyword's wildcard region, rewritten every T_rewrite, withdrawn on
// claim), the cache of region views, and the client side every party uses
// (Find a job by query, Harvest all entries of a keyword region).
package indexnet

import "time"

// Config gathers the index settings of a party.
type Config struct {
	// Server tunes a node's index server.
	Server ServerConfig
	// Writer tunes a node's entry writer.
	Writer WriterConfig
	// RegionBits is p, the bits a wildcard region shares with its
	// keyword's centre. Default DefaultRegionBits (4).
	RegionBits int
	// RegionTTL is how long a region view is reused. Default
	// DefaultRegionTTL (5 min).
	RegionTTL time.Duration
	// FindTries is how many random points a Find asks. Default 3.
	FindTries int
}
