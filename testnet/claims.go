package testnet

import "github.com/up-pool/up/claimnet"

// ClaimLogs returns the permanent-claim log of every running node.
func (n *Network) ClaimLogs() [][]claimnet.Record {
	var logs [][]claimnet.Record
	for _, nd := range n.Live() {
		logs = append(logs, nd.Claims().Log())
	}
	return logs
}

// ClaimedTwice is the no-double-claim check over claim logs: the jobs
// whose permanent claims, at any node, name more than one client, each
// with the number of clients. A claim its node logged as released does
// not count: a client gives a claim back at once when its confirm failed
// elsewhere, which the protocol allows when it outlasts T_claim.
func ClaimedTwice(logs ...[]claimnet.Record) map[string]int {
	claimers := map[string]map[string]bool{}
	for _, log := range logs {
		for _, rec := range log {
			if rec.Released {
				continue
			}
			if claimers[string(rec.Job)] == nil {
				claimers[string(rec.Job)] = map[string]bool{}
			}
			claimers[string(rec.Job)][string(rec.Client)] = true
		}
	}
	twice := map[string]int{}
	for job, clients := range claimers {
		if len(clients) > 1 {
			twice[job] = len(clients)
		}
	}
	return twice
}
