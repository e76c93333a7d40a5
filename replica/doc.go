// Package replica owns the pure rules of where a job's replicas live and
// what a node does with each job it holds: a republish round's decision
// per job (Decide) and plan (PlanRound), where a failed sync goes next
// (Replan), and the hand-on of jobs to nodes that join nearer them
// (HandOnTo), and the repair of jobs whose r closest lost a node
// (RepairTo). Node IDs are a type parameter, so the pool steps the rules
// with libp2p peer IDs and the simulator with its own integers. No
// sockets, clocks, locks or goroutines: time and liveness come in.
package replica
