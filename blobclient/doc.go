// Package blobclient is the project's and the client's side of U.P.'s
// blob protocols (wire/blobs.go; the node's side is package blobnet,
// which this package must not link, nor the node's store).
//
// A project signs a statement for its blob (Statement) and uploads it
// (Upload): the chunks go to the blob's closest node only, which places
// the blob on the r closest, so the project's upstream is the blob's size
// once; the project then offers the blob to each of the r closest itself
// and reports what each holds, sending a node only chunks it still lacks.
// A client finds a blob's nodes and its manifest, checked against the CID
// the job names (Sources), and downloads it with blob/fetch, which
// verifies every chunk and stops asking a node caught lying (Fetch).
// Push, the offer-then-missing-chunks exchange with one node, is shared
// with the nodes' placement and repair.
package blobclient
