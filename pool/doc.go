// Package pool owns a node's share of the job pool: the signed jobs it
// holds and their replica states, persisted in the node's store; the job
// protocols (store with replication to the r closest, get, and the
// two-way republish sync); verification of every job against its
// project's certificate, once per job; and the timers that republish,
// repair and hand over replicas (a newcomer is handed its jobs at once,
// handoff.go; a departed node's place in a job's r closest is filled at
// once, repair.go), lapse expired claims and delete collected jobs.
// Decisions on states are job.Receive (the join) and job.Lapse (a claim's
// end on this node's clock, T_skew past its deadline); which jobs go to
// whom is package replica's rules, pure functions of the node's view.
package pool
