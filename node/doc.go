// Package node owns the volunteer daemon: it loads the node's identity from
// its data directory, starts the libp2p host, admission, kad-dht and the
// node's protocol handlers, opens the on-disk store, remembers known peers
// so a restart rejoins, reloads the revocation list, and serves the local
// HTTP API (/status, /metrics). Protocol decisions live in their own
// packages; this one wires them to the network and the disk.
package node
