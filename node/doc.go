// Package node owns the volunteer daemon: it loads the node's identity from
// its data directory, starts the libp2p host, admission, kad-dht and the
// node's protocol handlers, opens the on-disk store, remembers known peers
// so a restart rejoins, reloads the revocation list, samples its own state
// into a bounded time series (Sampler), and serves the local HTTP API
// behind web.Guard: the node's page (GET /), /status, /api/series,
// /evidence and /metrics. Protocol decisions live in their own packages;
// this one wires them to the network and the disk.
package node
