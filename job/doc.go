// Package job is U.P.'s shared vocabulary for jobs: the job specification a
// project signs, its canonical encoding and CID (the job's key in the
// overlay), and the replica state with its merge. A spec names its
// application by name, or (version 3) as a WebAssembly module blob, and
// its inputs by URL and SHA-256 or (version 3) as blobs, both blobs by
// their manifest CID; versions 1 and 2 are still read in their own
// layouts. It is pure: no I/O, no clock (time comes in as Unix
// milliseconds), no libp2p.
package job
