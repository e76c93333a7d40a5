package sim

import (
	"fmt"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
)

// Script is a small simulated network for scripted claim scenarios: one
// job on its r closest nodes, some of which deny every claim, and clients
// that claim and release it one attempt at a time. Each claim reports the
// decisions it met: the outcome, and which of the job's nodes (by rank of
// closeness) granted. The harness runs the same script through real nodes
// on mocknet and compares (testnet's TestSimAndNodesDecideAlike): both
// step claim.Driver on the client and claim.Server on the nodes.
type Script struct {
	s       *Sim
	job     int32
	rank    map[string]int // node name -> rank of closeness to the job
	clients map[string]*attempt
	ended   *attempt
	out     claim.Outcome
	closest []int32  // the job's nodes, closest first
	accepts []string // the nodes that accepted the running attempt's confirm
}

// ScriptClaim is what one scripted claim attempt decided.
type ScriptClaim struct {
	Outcome  claim.Outcome
	Granted  []int // ranks (0 = the job's closest node) whose replies granted, nearest first
	Accepted []int // ranks whose nodes accepted the confirm, in the order they answered
}

// NewScript starts a network of nodes (at least r = 5) with one ready job
// on its 5 closest nodes; the nodes at the ranks in deny deny every claim
// and refuse every confirm.
func NewScript(nodes int, seed uint64, deny ...int) (*Script, error) {
	s, err := New(Config{Workload: Static, Nodes: nodes, Jobs: 1, Seed: seed})
	if err != nil {
		return nil, err
	}
	sc := &Script{s: s, rank: map[string]int{}, clients: map[string]*attempt{}}
	sc.job = s.newJob(0, s.tFinish)
	closest := s.view(0).closest(s.jobs[sc.job].pos, s.c.R, nil)
	if len(closest) < s.c.R {
		return nil, fmt.Errorf("script: %d nodes hold the job, want %d", len(closest), s.c.R)
	}
	r := &s.jobs[sc.job]
	for i, id := range closest {
		s.putReplica(id, sc.job, job.State{})
		r.view = append(r.view, s.nodes[id].name)
		sc.rank[s.nodes[id].name] = i
	}
	for _, k := range deny {
		if k < 0 || k >= len(closest) {
			return nil, fmt.Errorf("script: no node of rank %d", k)
		}
		s.fault[closest[k]] = Deny
	}
	s.onAttemptEnd = func(att *attempt, out claim.Outcome) { sc.ended, sc.out = att, out }
	s.onConfirmed = func(_ *attempt, node string, ok bool) {
		if ok {
			sc.accepts = append(sc.accepts, node)
		}
	}
	sc.closest = closest
	return sc, nil
}

// SkewClock sets the clock of the job's node at rank (0 = closest) off
// true time by offset; the clients' clocks stay true. A clock beyond
// T_skew refuses every confirm (the claim's start is too far from it).
func (sc *Script) SkewClock(rank int, offset time.Duration) error {
	if rank < 0 || rank >= len(sc.closest) {
		return fmt.Errorf("script: no node of rank %d", rank)
	}
	sc.s.clock[sc.closest[rank]].offset = ms(offset)
	return nil
}

// Claim runs one claim attempt of client on the job to its end and
// returns what it decided.
func (sc *Script) Claim(client string) ScriptClaim {
	s := sc.s
	att := s.newAttempt(false)
	att.client = []byte(client)
	att.job = sc.job
	att.drv = claim.NewDriver(s.jobs[sc.job].view, s.c.R)
	sc.ended, sc.accepts = nil, nil
	s.act(att, att.drv.Next(), 0)
	for sc.ended != att {
		ev, ok := s.e.next()
		if !ok {
			return ScriptClaim{Outcome: claim.Pending} // the attempt never ended
		}
		s.dispatch(ev)
	}
	// The real claimer returns once the releases of a lost attempt's
	// grants are answered: let them land before the next step.
	sc.runUntil(s.e.now + ms(s.c.RPCTimeout))
	res := ScriptClaim{Outcome: sc.out}
	for _, name := range sc.accepts {
		res.Accepted = append(res.Accepted, sc.rank[name])
	}
	for _, rp := range att.replies {
		if rp.Kind == claim.Granted {
			res.Granted = append(res.Granted, sc.rank[rp.Node])
		}
	}
	if sc.out == claim.Won {
		sc.clients[client] = att
	}
	return res
}

// Release has client give back the claim it won, at every node of the
// job, and runs the network until the releases arrived.
func (sc *Script) Release(client string) error {
	att := sc.clients[client]
	if att == nil {
		return fmt.Errorf("script: client %q holds no claim", client)
	}
	delete(sc.clients, client)
	s := sc.s
	for _, name := range s.jobs[sc.job].view {
		id, gen := parseName(name)
		s.e.after(s.latency(), event{kind: evRelease, node: id, gen: gen, att: att})
	}
	sc.runUntil(s.e.now + ms(s.c.RPCTimeout))
	return nil
}

// runUntil fires the network's events up to time t (ms).
func (sc *Script) runUntil(t int64) {
	for {
		at, ok := sc.s.e.peek()
		if !ok || at > t {
			return
		}
		ev, _ := sc.s.e.next()
		sc.s.dispatch(ev)
	}
}
