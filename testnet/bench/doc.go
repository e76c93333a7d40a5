// Package bench owns `up bench`, the whole-lifecycle benchmark: nodes on
// loopback TCP from the testnet harness, a project submitting and
// harvesting, and real client.Client workers (their application run in
// process or through the launcher), measured from the first submission
// to the last harvest: throughput, CPU by party and by kind of work,
// RPCs, lookups, latency, bytes and memory per job. The adversarial runs
// (Options.Adversary) check the network's defences under load.
package bench
