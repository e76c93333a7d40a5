// Package wire owns the bytes U.P. parties exchange: the protocol IDs of the
// /up/ stream protocols, their message types, and the framed, deterministic
// CBOR codec they travel in. It holds no protocol logic; every decoder bounds
// what it accepts, because every byte here may come from a hostile peer.
package wire
