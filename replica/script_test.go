package replica

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/up-pool/up/job"
)

// TestScripts runs the replica rules' scenario transcripts in
// testdata/*.txt (raft's datadriven style): nodes on a line of distances
// from one job, each holding what it holds, stepping PlanRound each round
// on its own view, with the syncs delivered (merged with job.Merge) only
// between nodes that can reach each other. A transcript reads as the
// story of a job through partitions, crashes and joins; `go test
// ./replica -run TestScripts -rewrite` rewrites the expected outputs after
// a deliberate change of behaviour.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		w := &replicaWorld{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := w.run(t, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

// replicaWorld is one job and the nodes near it.
type replicaWorld struct {
	r      int
	expiry int64    // replica expiry, ms
	now    int64    // ms, every node's clock
	names  []string // nearest to the job first
	nodes  map[string]*replicaNode
	side   map[string]int // partition side; nodes on different sides cannot reach each other
}

// replicaNode is one node and its copy of the job.
type replicaNode struct {
	up   bool
	held *Holding
}

const scriptJob = "j"

func (w *replicaWorld) run(t *testing.T, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "nodes":
		w.r, w.expiry = 5, 30_000
		if d.HasArg("r") {
			d.ScanArgs(t, "r", &w.r)
		}
		w.names = strings.Fields(d.Input)
		w.nodes, w.side = map[string]*replicaNode{}, map[string]int{}
		for _, n := range w.names {
			w.nodes[n] = &replicaNode{up: true}
		}
		return fmt.Sprintf("%d nodes, nearest the job first; r %d, replica expiry %s\n", len(w.names), w.r,
			time.Duration(w.expiry)*time.Millisecond), nil
	case "store":
		var on string
		d.ScanArgs(t, "on", &on)
		for _, n := range strings.Split(on, ",") {
			w.nodes[n].held = &Holding{Key: scriptJob, Responsible: w.now}
		}
		return w.holders(), nil
	case "set":
		return w.set(t, d)
	case "partition":
		for i, group := range strings.Split(d.Input, "|") {
			for _, n := range strings.Fields(group) {
				w.side[n] = i
			}
		}
		return "", nil
	case "heal":
		clear(w.side)
		return "", nil
	case "crash", "restart":
		var n string
		d.ScanArgs(t, "node", &n)
		w.nodes[n].up = d.Cmd == "restart"
		return "", nil
	case "tick":
		var ms int
		d.ScanArgs(t, "ms", &ms)
		w.now += int64(ms)
		return fmt.Sprintf("now %s\n", time.Duration(w.now)*time.Millisecond), nil
	case "round":
		return w.round(), nil
	case "holders":
		return w.holders(), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// set changes the job's state at one node, as a client's claim, result or
// the project's collect would there.
func (w *replicaWorld) set(t *testing.T, d *datadriven.TestData) (string, error) {
	var n, phase string
	d.ScanArgs(t, "node", &n)
	d.ScanArgs(t, "phase", &phase)
	h := w.nodes[n].held
	if h == nil {
		return "", fmt.Errorf("%s does not hold the job", n)
	}
	switch phase {
	case "claimed":
		h.State = job.State{Phase: job.Claimed, Client: []byte("c1"), Start: w.now, Deadline: w.now + 3_600_000}
	case "finished":
		h.State = job.State{Phase: job.Finished, Client: []byte("c1"), At: w.now, Result: []byte("r1")}
	case "collected":
		h.State = job.State{Phase: job.Collected, At: w.now}
	default:
		return "", fmt.Errorf("phase %q", phase)
	}
	return w.holders(), nil
}

// reach says whether a can send to b: both up, on the same side.
func (w *replicaWorld) reach(a, b string) bool {
	return w.nodes[a].up && w.nodes[b].up && w.side[a] == w.side[b]
}

// view is node n's r nearest live nodes to the job, closest first: the
// nodes it can reach (liveness is an input of PlanRound).
func (w *replicaWorld) view(n string) []string {
	var v []string
	for _, m := range w.names {
		if len(v) < w.r && (m == n || w.reach(n, m)) {
			v = append(v, m)
		}
	}
	return v
}

// round runs one republish round at every node that is up, planning on
// the states held at the round's start, then delivers the syncs that can
// reach their targets: a target lacking the job is sent it whole.
func (w *replicaWorld) round() string {
	type msg struct {
		from, to string
		st       job.State
	}
	var sent []msg
	drops := map[string]bool{}
	var b strings.Builder
	for _, n := range w.names {
		nd := w.nodes[n]
		if !nd.up || nd.held == nil {
			continue
		}
		pl := PlanRound(n, []RoundJob[string]{{Holding: *nd.held, View: w.view(n)}}, w.now, w.expiry)
		var acts []string
		if slices.Contains(pl.Responsible, scriptJob) {
			nd.held.Responsible = w.now
		}
		switch {
		case pl.Closest == 1:
			acts = append(acts, "republishes")
		case pl.Handed[scriptJob]:
			acts = append(acts, "hands on")
		}
		for _, to := range w.names {
			if slices.Contains(pl.Sync[to], scriptJob) {
				sent = append(sent, msg{n, to, nd.held.State})
				acts = append(acts, "→"+to)
			}
		}
		if slices.Contains(pl.Drop, scriptJob) {
			drops[n] = true
			acts = append(acts, "(past the replica expiry: drops it once handed on)")
		}
		fmt.Fprintf(&b, "%s: %s\n", n, strings.Join(acts, " "))
	}
	for _, m := range sent {
		if !w.reach(m.from, m.to) {
			continue
		}
		if drops[m.from] {
			w.nodes[m.from].held = nil // a lingering copy goes only after a sync that worked
		}
		to := w.nodes[m.to]
		if to.held == nil {
			to.held = &Holding{Key: scriptJob, State: m.st, Responsible: w.now}
			continue
		}
		to.held.State = job.Merge(to.held.State, m.st)
	}
	b.WriteString(w.holders())
	return b.String()
}

// holders lists what each node holds: the job's phase, or "-".
func (w *replicaWorld) holders() string {
	var parts []string
	for _, n := range w.names {
		nd := w.nodes[n]
		s := "-"
		if nd.held != nil {
			s = nd.held.State.Phase.String()
		}
		if !nd.up {
			s += " (down)"
		}
		parts = append(parts, n+" "+s)
	}
	return "holds: " + strings.Join(parts, ", ") + "\n"
}
