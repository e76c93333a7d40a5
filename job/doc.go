// Package job is U.P.'s shared vocabulary for jobs: the job specification a
// project signs, its canonical encoding and CID (the job's key in the
// overlay), and the replica state with its merge. It is pure: no I/O, no
// clock (time comes in as Unix milliseconds), no libp2p.
package job
