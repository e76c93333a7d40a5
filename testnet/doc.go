// Package testnet owns in-process U.P. networks: it starts N real nodes
// (full libp2p stack on loopback TCP, or mocknet) with a test CA in one
// process, fills their routing tables directly for a fast start, and can
// kill, restart and partition them. Tests of every later package, the demo
// and the benchmarks build on it.
package testnet
