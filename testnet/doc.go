// Package testnet is the harness: in-process U.P. networks of N real
// nodes (full libp2p stack on loopback TCP, or mocknet) with a test CA in
// one process, their routing tables filled directly for a fast start; it
// kills, restarts and partitions nodes, starts parties (projects,
// clients), skews and jumps clocks, and makes nodes Byzantine (the
// adversarial network, Options.Adversary, is part of the harness: it is
// how a network is configured, and its checks read every node). It keeps
// once what the tests and the runs on it share: the fixture
// (StartFixture, StartNetwork, SubmitJobs), the checkers (ClaimedTwice,
// CheckAdversary, Unharvested) and the counters (EachReceived,
// WireBytes). Tests of every later package build on it, and so do the
// runs in its subpackages: testnet/bench (`up bench`), testnet/scenario
// (`up testnet run`) and testnet/demo (`up demo`), none of which it
// imports; testnet/sim is the simulator, testnet/testkit the helpers
// every package's tests share.
package testnet
