package testnet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/project"
)

// AdversaryReport is what an adversarial run's checks found.
type AdversaryReport struct {
	Byzantine map[string]string // node name → behaviour
	// DoubleClaims: jobs whose unreleased claims, over the honest nodes'
	// claim logs, name more than one client.
	DoubleClaims int
	// DoubleCredit: (unit, client) pairs credited more than once.
	DoubleCredit int
	// Refused counts, by sender, the forgeries honest nodes refused.
	Refused map[string]int
	// Misattributed lists evidence records naming an honest sender.
	Misattributed []string
	// Jobs held at the end; OverF of them have more than F Byzantine
	// nodes among their r closest.
	Jobs, OverF, F int
}

// Problems lists, one line each, what the report shows went wrong.
func (r AdversaryReport) Problems() []string {
	var out []string
	if r.DoubleClaims > 0 {
		out = append(out, fmt.Sprintf("%d jobs claimed by two clients", r.DoubleClaims))
	}
	if r.DoubleCredit > 0 {
		out = append(out, fmt.Sprintf("%d (unit, client) pairs credited twice", r.DoubleCredit))
	}
	for _, m := range r.Misattributed {
		out = append(out, "evidence against an honest node: "+m)
	}
	for name, b := range r.Byzantine {
		if b == BehaviourForgeStates && r.Refused[name] == 0 {
			out = append(out, fmt.Sprintf("forger %s: no forgery refused", name))
		}
	}
	return out
}

// String is the report in a few lines.
func (r AdversaryReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "byzantine %v\n", r.Byzantine)
	fmt.Fprintf(&b, "double claims %d, double credit %d, forgeries refused by sender %v, misattributed %d\n",
		r.DoubleClaims, r.DoubleCredit, r.Refused, len(r.Misattributed))
	fmt.Fprintf(&b, "%d of %d jobs have more than f = %d Byzantine replicas among their r closest\n", r.OverF, r.Jobs, r.F)
	return b.String()
}

// CheckAdversary reads the honest nodes' claim logs and evidence and the
// ledger's credit. r is the replication, f the faulty replicas tolerated.
func (n *Network) CheckAdversary(ledger *project.Ledger, r, f int) (AdversaryReport, error) {
	rep := AdversaryReport{Byzantine: map[string]string{}, Refused: map[string]int{}, F: f}
	byz := n.Byzantine()
	bad := map[string]bool{}
	for i, b := range byz {
		if nd := n.Node(i); nd != nil {
			rep.Byzantine[nd.Name()] = b
			bad[nd.ID().String()] = true
		}
	}
	var logs [][]claimnet.Record
	var evidence [][]pool.Evidence
	keys := map[string][]byte{}
	for i := range n.Len() {
		nd := n.Node(i)
		if nd == nil {
			continue
		}
		for _, k := range nd.Pool().Keys() {
			keys[string(k)] = k
		}
		if byz[i] != "" {
			continue
		}
		logs = append(logs, nd.Claims().Log())
		evidence = append(evidence, nd.Pool().Evidence())
	}
	rep.DoubleClaims = doubleClaims(logs)
	rep.Refused, rep.Misattributed = attribute(evidence, bad)
	for _, k := range keys {
		faulty := 0
		for _, id := range n.TrueClosest(k, r) {
			if bad[id.String()] {
				faulty++
			}
		}
		if faulty > f {
			rep.OverF++
		}
	}
	rep.Jobs = len(keys)
	err := ledger.DB().QueryRow(`SELECT COUNT(*) FROM (SELECT j.unit, r.client FROM results r JOIN jobs j ON j.cid = r.cid
		WHERE r.valid = 1 GROUP BY j.unit, r.client HAVING COUNT(*) > 1)`).Scan(&rep.DoubleCredit)
	if err != nil {
		return rep, fmt.Errorf("count double credit in the ledger: %w", err)
	}
	return rep, nil
}

// doubleClaims counts the jobs whose unreleased claims, over the logs,
// name more than one client.
func doubleClaims(logs [][]claimnet.Record) int {
	released := map[string]bool{}
	clients := map[string]map[string]bool{}
	for _, log := range logs {
		for _, rec := range log {
			k := string(rec.Job) + "\x00" + string(rec.Client) + "\x00" + strconv.FormatInt(rec.Start, 10)
			released[k] = released[k] || rec.Released
		}
	}
	for _, log := range logs {
		for _, rec := range log {
			k := string(rec.Job) + "\x00" + string(rec.Client) + "\x00" + strconv.FormatInt(rec.Start, 10)
			if released[k] {
				continue
			}
			if clients[string(rec.Job)] == nil {
				clients[string(rec.Job)] = map[string]bool{}
			}
			clients[string(rec.Job)][string(rec.Client)] = true
		}
	}
	n := 0
	for _, cs := range clients {
		if len(cs) > 1 {
			n++
		}
	}
	return n
}

// attribute counts the evidence records by sender and lists those whose
// sending peer is not in bad.
func attribute(evidence [][]pool.Evidence, bad map[string]bool) (map[string]int, []string) {
	refused := map[string]int{}
	var wrong []string
	for _, recs := range evidence {
		for _, e := range recs {
			refused[e.Sender]++
			if !bad[e.Peer] {
				wrong = append(wrong, fmt.Sprintf("%s (%s) sent %s for job %s: %s", e.Sender, e.Peer, e.Phase, e.Job, e.Reason))
			}
		}
	}
	return refused, wrong
}
