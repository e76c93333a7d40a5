// Package dht owns U.P.'s view of the keyspace on top of go-libp2p-kad-dht:
// the kad-dht instance under the private /up prefix with admission-filtered
// routing tables, closest-r lookups of keys with a cache, the local view of
// the nearest known peers to any raw position, and the /up/near/1.0.0 RPC
// that lets a party reach wildcard index regions. The position arithmetic
// itself is in the pure subpackage keyspace.
package dht
