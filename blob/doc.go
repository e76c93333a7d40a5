// Package blob owns U.P.'s content-addressed blobs: a job input or a
// WebAssembly application module cut into fixed-size chunks, each
// addressed by its CID (CIDv1, raw, sha2-256 of its bytes); the manifest
// that lists a blob's chunks in order and whose CID (CIDv1, dag-cbor,
// sha2-256 of its canonical encoding) names the blob; and the
// project-signed statement a node checks before it stores any of a blob's
// chunks. Every decoder enforces the bounds below.
//
// It is pure: no network, no files, no clock, no randomness; times come in
// as Unix milliseconds. The client's parallel fetcher is blob/fetch, its
// on-disk cache blob/cache.
package blob
