// Package blobnet is the node's side of U.P.'s blobs (issue 20): a
// project's job inputs and WebAssembly modules, cut into 1 MiB chunks by
// package blob, held on the r nodes closest to each blob's key (its
// manifest's CID bytes).
//
// A node serves four protocols (wire/blobs.go). An offer carries the
// project's signed statement and the manifest it names; the node checks
// the statement against the project's certificate (the CA's, not revoked,
// of the project the statement names, whose reference it carries) and its
// expiry on the node's own clock, charges the blob to the project's quota
// on this node, stores statement and manifest, and answers the chunks it
// lacks. A chunk put is stored only when the blob's manifest lists it and
// its bytes hash to its CID; chunks are keyed by CID, so two blobs
// sharing a chunk store it once. Manifests and chunks are served to every
// admitted party; the client verifies what it gets (blob/fetch).
//
// A project uploads a blob to its closest node only, with Replicate set;
// that node pushes it on to the others of the r closest (offer, then only
// the chunks each lacks), so the project's upstream is about the blob's
// size once, not r times. Each repair round (the job republish period)
// the holders push a blob to those of its r closest that lack it, a
// holder no longer among them hands it on and deletes its copy, and a
// blob whose statement expired on the node's clock is deleted.
//
// Refusals (a forged, unsigned or expired statement, a chunk the manifest
// does not list or whose bytes are not its CID's, a project over its
// quota) change nothing and are counted by reason in
// up_blob_refused_total. The project's and client's side of these
// protocols is package blobclient, which links no store.
package blobnet
