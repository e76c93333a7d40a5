// Package claim is the pure core of U.P.'s claim protocol (thesis 3.2.2):
// the signed, timestamped replies nodes give (grant, deny, don't-care),
// the node-side decision with temporary claims that lapse after T_claim,
// the check a node runs on a client's confirm before the claim becomes
// permanent until T_finish, and the client-side driver that asks the r
// closest nodes one at a time in order and wins with a quorum (Quorum) of
// grants and accepted confirms, so up to Faults(r) faulty replicas neither
// block a job nor make two winners; it releases when more deny than the
// quorum can spare. No I/O, no clock: time comes in as
// Unix milliseconds; peers are opaque strings.
package claim
