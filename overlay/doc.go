// Package overlay owns a U.P. party's libp2p presence: the host (TCP, Noise,
// yamux, resource and connection managers), admission of peers by
// certificate (the /up/hello/1.0.0 handshake, the gate in front of every
// /up/ protocol, the connection gater, revocation), and the framed
// request/response RPC that all /up/ protocols use. Nodes, clients and
// projects all build on it; the protocol decisions live elsewhere.
package overlay
