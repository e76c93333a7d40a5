// Package claimclient is the client side of the claim protocol: the
// Claimer runs a claim.Driver against a job's closest nodes (ask, confirm
// with a quorum of grants, certify, release) and delivers the job's
// result to a majority of its replicas. It links no pool or store: clients
// carry only what they use.
package claimclient
