package index

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/replica"
)

// TestWriterScripts runs the index writer's scenario transcripts in
// testdata/*.txt (raft's datadriven style): nodes on a line of distances
// from one job, each holding it or not, each writer round deciding with
// Lists, Desired and Reconcile what this node's entries should be, and
// joins handing the job on with replica.HandOnTo. A transcript reads as
// the story of a job's listing through joins and moves; `go test ./index
// -run TestWriterScripts -rewrite` rewrites the expected outputs after a
// deliberate change of behaviour.
func TestWriterScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		w := &writerWorld{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := w.run(t, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

const scriptProject = "lhc"

// writerWorld is one job of project lhc, the nodes near it and the index.
type writerWorld struct {
	r        int
	now      int64    // ms, every node's clock
	names    []string // nearest to the job first
	nodes    map[string]*writerNode
	state    job.State           // the job's state, at every holder
	keywords []string            // the job's listing
	index    map[string][]string // keyword → the nodes whose entry lists the job
}

// writerNode is one node: whether it holds the job, when it handed the job
// on (the pool's ListingHeld grace), and the keywords its writer has the
// job listed under.
type writerNode struct {
	holds   bool
	handed  int64 // ms; -1: never
	written []string
}

func (w *writerWorld) run(t *testing.T, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "nodes":
		w.r = 5
		w.names = strings.Fields(d.Input)
		w.nodes, w.index = map[string]*writerNode{}, map[string][]string{}
		for _, n := range w.names {
			w.nodes[n] = &writerNode{handed: -1}
		}
		return fmt.Sprintf("%d nodes, nearest the job first; r %d\n", len(w.names), w.r), nil
	case "store":
		var on, kws string
		d.ScanArgs(t, "on", &on)
		d.ScanArgs(t, "keywords", &kws)
		w.keywords = strings.Split(kws, ",")
		for _, n := range strings.Split(on, ",") {
			w.nodes[n].holds = true
		}
		return w.holders(), nil
	case "set":
		var phase string
		d.ScanArgs(t, "phase", &phase)
		switch phase {
		case "ready":
			w.state = job.State{}
		case "claimed":
			w.state = job.State{Phase: job.Claimed, Client: []byte("c1"), Start: w.now, Deadline: w.now + 3_600_000}
		case "finished":
			w.state = job.State{Phase: job.Finished, Client: []byte("c1"), At: w.now, Result: []byte("r1")}
		default:
			return "", fmt.Errorf("phase %q", phase)
		}
		return "", nil
	case "join", "move":
		return w.join(t, d), nil
	case "tick":
		var ms int
		d.ScanArgs(t, "ms", &ms)
		w.now += int64(ms)
		return fmt.Sprintf("now %s\n", time.Duration(w.now)*time.Millisecond), nil
	case "writers":
		return w.writers(), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// join places node (new, or moving from where it was) just before the
// node named by before, or last; every node holding the job that knew r
// others hands the job on to the newcomer when replica.HandOnTo says so.
// A mover keeps what it holds and lists (its writer decides, next round).
func (w *writerWorld) join(t *testing.T, d *datadriven.TestData) string {
	var n, before string
	d.ScanArgs(t, "node", &n)
	if d.HasArg("before") {
		d.ScanArgs(t, "before", &before)
	}
	if i := slices.Index(w.names, n); i >= 0 {
		w.names = slices.Delete(w.names, i, i+1)
	} else {
		w.nodes[n] = &writerNode{handed: -1}
	}
	if i := slices.Index(w.names, before); i >= 0 {
		w.names = slices.Insert(w.names, i, n)
	} else {
		w.names = append(w.names, n)
	}
	var b strings.Builder
	view := w.names[:min(len(w.names), w.r+1)]
	for _, m := range w.names {
		nd := w.nodes[m]
		if m == n || !nd.holds {
			continue
		}
		for _, to := range replica.HandOnTo(m, []string{n}, view, len(w.names)-2, w.r) {
			w.nodes[to].holds = true
			nd.handed = w.now
			fmt.Fprintf(&b, "%s hands the job on to %s\n", m, to)
		}
	}
	b.WriteString(w.holders())
	return b.String()
}

// writers runs a writer round at every node holding the job: this node
// lists it when index.Lists says so (the closest, or its listing held
// for a newcomer), wants what Desired says, and Reconcile turns the
// difference into withdrawals and placements of its own entries.
func (w *writerWorld) writers() string {
	var b strings.Builder
	for i, n := range w.names {
		nd := w.nodes[n]
		if !nd.holds && len(nd.written) == 0 {
			continue
		}
		held := nd.handed >= 0 && w.now-nd.handed < replica.HandOnGraceMS
		lists := Lists(i == 0, false, held, len(nd.written) > 0)
		var want []string
		if nd.holds {
			want = Desired(lists, w.state, w.keywords, scriptProject)
		}
		rc := Reconcile(nd.written, want, false, false)
		for _, kw := range rc.Withdraw {
			w.index[kw] = slices.DeleteFunc(w.index[kw], func(a string) bool { return a == n })
			nd.written = slices.DeleteFunc(nd.written, func(k string) bool { return k == kw })
		}
		for _, kw := range rc.Place {
			w.index[kw] = append(w.index[kw], n)
			nd.written = append(nd.written, kw)
		}
		if len(rc.Withdraw)+len(rc.Place) > 0 {
			fmt.Fprintf(&b, "%s: withdraws %v, places %v\n", n, rc.Withdraw, rc.Place)
		}
	}
	b.WriteString(w.listing())
	return b.String()
}

// holders lists the nodes in order of distance, marking those holding
// the job.
func (w *writerWorld) holders() string {
	parts := make([]string, len(w.names))
	for i, n := range w.names {
		parts[i] = n
		if w.nodes[n].holds {
			parts[i] += "*"
		}
	}
	return "nearest first (* holds the job): " + strings.Join(parts, " ") + "\n"
}

// listing prints the index: each keyword and the nodes whose entries
// list the job under it.
func (w *writerWorld) listing() string {
	var kws []string
	for kw, by := range w.index {
		if len(by) > 0 {
			kws = append(kws, kw)
		}
	}
	if len(kws) == 0 {
		return "index: the job is listed nowhere\n"
	}
	sort.Strings(kws)
	var b strings.Builder
	for _, kw := range kws {
		fmt.Fprintf(&b, "index %s: listed by %s\n", kw, strings.Join(w.index[kw], ", "))
	}
	return b.String()
}
