// Package indexnet is the index server a node runs: the write, withdraw
// and query protocols around an index.Table, with listing verification,
// and the hand-over of entries when the keyspace changes hands. The
// client side every party uses (region views, Find, Harvest) is package
// indexclient; the writer that keeps a node's own jobs listed is package
// indexwriter (it reads the node's pool).
package indexnet

import "github.com/up-pool/up/indexclient"

// Config gathers the index settings of a node: its server's, and the
// client side's its own finder uses (promoted fields: RegionBits,
// RegionTTL, FindTries; a node's region points are seeded from the seed
// of its overlay.Env, so the promoted Seed is the agents' only).
type Config struct {
	// Server tunes a node's index server.
	Server ServerConfig
	indexclient.Config
}
