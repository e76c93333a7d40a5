// Package scenario owns `up testnet run`: the simulator's scenarios
// (static, dynamic, churn, load balancing), shortened, on real nodes of
// the testnet harness in one process (libp2p mocknet, every protocol
// period divided by a scale), with open-loop clients as the simulator's,
// and their figures printed beside the simulator's (testnet/sim) for the
// same scenario.
package scenario
