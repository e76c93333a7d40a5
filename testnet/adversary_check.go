package testnet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ipfs/go-cid"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/pool"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/wire"
)

// AdversaryReport is what an adversarial run's checks found.
type AdversaryReport struct {
	Byzantine map[string]string // node name → behaviour
	// Jumped names the nodes whose clock jumped beyond T_skew: faults too.
	Jumped []string
	// DoubleClaims: jobs with at most F faulty replicas that two clients
	// each hold by a claim that could have won (doubleClaims);
	// DoubleClaimsOverF the same among jobs with more.
	DoubleClaims, DoubleClaimsOverF int
	// DoubleCredit: (unit, client) pairs credited more than once.
	DoubleCredit int
	// Refused counts, by sender, the forgeries honest nodes refused.
	Refused map[string]int
	// Misattributed lists evidence records naming an honest sender.
	Misattributed []string
	// Jobs the project submitted; OverF of them have more than F faulty
	// nodes (Byzantine or jumped clocks) among their r closest.
	Jobs, OverF, F int
	// Unharvested lists the jobs not collected, each with its faulty
	// replicas; UnharvestedWithinF counts those with at most F.
	Unharvested        []string
	UnharvestedWithinF int
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
	if r.UnharvestedWithinF > 0 {
		out = append(out, fmt.Sprintf("%d jobs with at most f = %d faulty replicas not harvested", r.UnharvestedWithinF, r.F))
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
	fmt.Fprintf(&b, "byzantine %v, jumped clocks %v\n", r.Byzantine, r.Jumped)
	fmt.Fprintf(&b, "double claims %d (and %d beyond f), double credit %d, forgeries refused by sender %v, misattributed %d\n",
		r.DoubleClaims, r.DoubleClaimsOverF, r.DoubleCredit, r.Refused, len(r.Misattributed))
	fmt.Fprintf(&b, "%d of %d jobs have more than f = %d faulty replicas among their r closest\n", r.OverF, r.Jobs, r.F)
	fmt.Fprintf(&b, "%d jobs not harvested (%d within f)\n", len(r.Unharvested), r.UnharvestedWithinF)
	for _, u := range r.Unharvested {
		fmt.Fprintf(&b, "  %s\n", u)
	}
	return b.String()
}

// CheckAdversary reads the honest nodes' claim logs and evidence and the
// ledger's jobs and credit. r is the replication, f the faulty replicas
// tolerated.
func (n *Network) CheckAdversary(ledger *project.Ledger, r, f int) (AdversaryReport, error) {
	rep := AdversaryReport{Byzantine: map[string]string{}, Refused: map[string]int{}, F: f}
	byz := n.Byzantine()
	bad, faulty := map[string]bool{}, map[string]bool{}
	var logs [][]claimnet.Record
	var evidence [][]pool.Evidence
	for i := range n.Len() {
		nd := n.Node(i)
		if nd == nil {
			continue
		}
		if _, jumps := n.ClockOffset(i); jumps {
			rep.Jumped = append(rep.Jumped, nd.Name())
			faulty[nd.ID().String()] = true
		}
		if b := byz[i]; b != "" {
			rep.Byzantine[nd.Name()] = b
			bad[nd.ID().String()], faulty[nd.ID().String()] = true, true
			continue
		}
		logs = append(logs, nd.Claims().Log())
		evidence = append(evidence, nd.Pool().Evidence())
	}
	for _, k := range doubleClaims(logs, claim.Quorum(r)-f) {
		bad := 0
		for _, id := range n.JobClosest(k, r) {
			if faulty[id.String()] {
				bad++
			}
		}
		if bad <= f {
			rep.DoubleClaims++
		} else {
			rep.DoubleClaimsOverF++
		}
	}
	rep.Refused, rep.Misattributed = attribute(evidence, bad)
	if err := n.checkJobs(ledger, r, faulty, &rep); err != nil {
		return rep, err
	}
	err := ledger.DB().QueryRow(`SELECT COUNT(*) FROM (SELECT j.unit, r.client FROM results r JOIN jobs j ON j.id = r.job
		WHERE r.valid = 1 GROUP BY j.unit, r.client HAVING COUNT(*) > 1)`).Scan(&rep.DoubleCredit)
	if err != nil {
		return rep, fmt.Errorf("count double credit in the ledger: %w", err)
	}
	return rep, nil
}

// checkJobs counts, over the ledger's jobs, those with more than rep.F
// faulty nodes among their r closest, and lists the jobs not harvested.
func (n *Network) checkJobs(ledger *project.Ledger, r int, faulty map[string]bool, rep *AdversaryReport) error {
	rows, err := ledger.DB().Query(`SELECT j.cid, j.state, s.listing FROM jobs j JOIN specs s ON s.job = j.id`)
	if err != nil {
		return fmt.Errorf("read the ledger's jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s, state string
		var listing []byte
		if err := rows.Scan(&s, &state, &listing); err != nil {
			return fmt.Errorf("read the ledger's jobs: %w", err)
		}
		_, l, err := job.DecodeListing(listing)
		if err != nil {
			return fmt.Errorf("ledger job %q: %w", s, err)
		}
		bad := 0
		for _, id := range n.TrueClosest(l.PlaceKey(), r) {
			if faulty[id.String()] {
				bad++
			}
		}
		rep.Jobs++
		if bad > rep.F {
			rep.OverF++
		}
		if state != project.StateCollected && state != project.StateHarvested {
			rep.Unharvested = append(rep.Unharvested, fmt.Sprintf("%s %s, %d faulty of its %d closest", s, state, bad, r))
			if bad <= rep.F {
				rep.UnharvestedWithinF++
			}
		}
	}
	return rows.Err()
}

// doubleClaims returns the jobs that two clients each hold by a claim
// that could have won: one that at least need honest nodes accepted and
// none saw released, over the honest nodes' claim logs. A winner has q
// acceptances of which at most f are Byzantine, so need = q − f; a claim
// accepted by fewer honest nodes failed (its client released it), or was
// superseded by a later winner's at the nodes that hold it.
func doubleClaims(logs [][]claimnet.Record, need int) [][]byte {
	type version struct {
		client string
		start  int64
	}
	released := map[string]bool{}
	key := func(rec claimnet.Record) string {
		return string(rec.Job) + "\x00" + string(rec.Client) + "\x00" + strconv.FormatInt(rec.Start, 10)
	}
	for _, log := range logs {
		for _, rec := range log {
			released[key(rec)] = released[key(rec)] || rec.Released
		}
	}
	accepts := map[string]map[version]int{}
	jobs := map[string][]byte{}
	for _, log := range logs {
		for _, rec := range log {
			if released[key(rec)] {
				continue
			}
			if accepts[string(rec.Job)] == nil {
				accepts[string(rec.Job)] = map[version]int{}
			}
			accepts[string(rec.Job)][version{string(rec.Client), rec.Start}]++
			jobs[string(rec.Job)] = rec.Job
		}
	}
	var out [][]byte
	for j, vs := range accepts {
		clients := map[string]bool{}
		for v, n := range vs {
			if n >= need {
				clients[v.client] = true
			}
		}
		if len(clients) > 1 {
			out = append(out, jobs[j])
		}
	}
	return out
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
				var it wire.SyncItem
				_ = codec.Unmarshal(e.Item, &it)
				pr, _ := job.DecodeProof(it.Proof)
				wrong = append(wrong, fmt.Sprintf("%s (%s) sent %s for job %s over %s: %s (item %+v, proof of %d bytes: claim %d, sig %d, cert %d)",
					e.Sender, e.Peer, e.Phase, e.Job, e.Protocol, e.Reason, it.State, len(it.Proof), len(pr.Claim), len(pr.Sig), len(pr.Cert)))
			}
		}
	}
	return refused, wrong
}

// faultyCounter returns a function counting, for a job's CID, the faulty
// nodes (Byzantine, or a jumped clock) among its r closest live nodes; -1
// for a CID that does not parse.
func (n *Network) faultyCounter(r int) func(c string) int {
	faulty, byz := map[string]bool{}, n.Byzantine()
	for i := range n.Len() {
		nd := n.Node(i)
		if nd == nil {
			continue
		}
		if _, jumps := n.ClockOffset(i); jumps || byz[i] != "" {
			faulty[nd.ID().String()] = true
		}
	}
	return func(s string) int {
		c, err := cid.Decode(s)
		if err != nil {
			return -1
		}
		bad := 0
		for _, id := range n.JobClosest(c.Bytes(), r) {
			if faulty[id.String()] {
				bad++
			}
		}
		return bad
	}
}
