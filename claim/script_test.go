package claim

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/up-pool/up/job"
)

// TestScripts runs the claim protocol's scenario transcripts in
// testdata/*.txt (raft's datadriven style): a job's replicas, each
// deciding with Decide and CheckConfirm on its own state, and clients
// each stepping a Driver. A transcript reads as the story of a race;
// `go test ./claim -run TestScripts -rewrite` rewrites the expected
// outputs after a deliberate change of behaviour.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		w := &scriptWorld{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			w.t = t
			out, err := w.run(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

// scriptWorld is one job on r replicas, and the clients claiming it.
type scriptWorld struct {
	t       *testing.T
	now     int64 // ms, every node's clock (skew is not what these scripts are about)
	tClaim  int64
	tFinish int64
	names   []string // the replicas, nearest to the job first
	nodes   map[string]*scriptNode
	clients map[string]*scriptClient
}

// scriptNode is one replica's view of the job.
type scriptNode struct {
	st   job.State
	temp *Temp
	deny bool            // faulty: denies every claim, refuses every confirm
	near map[string]bool // the nodes it counts among the job's closest (nil: the replicas)
}

// scriptClient is one client's claim attempt.
type scriptClient struct {
	key       []byte
	drv       *Driver
	act       Action
	confirmTo []string // the confirm the driver asked for, not yet sent
	start     int64
}

// take keeps the driver's next action (a confirm until it is sent).
func (c *scriptClient) take(a Action) {
	if len(a.Confirm) > 0 {
		c.confirmTo = a.Confirm
	}
	c.act = a
}

func (w *scriptWorld) run(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "replicas":
		return w.replicas(d)
	case "tick":
		var ms int
		d.ScanArgs(w.t, "ms", &ms)
		w.now += int64(ms)
		return fmt.Sprintf("now %s\n", time.Duration(w.now)*time.Millisecond), nil
	case "fault":
		return w.fault(d)
	case "view":
		return w.view(d)
	case "claim":
		return w.claim(d)
	case "ask":
		return w.ask(d)
	case "confirm":
		return w.confirm(d)
	case "release":
		return w.release(d)
	case "states":
		return w.states(), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// replicas n=5 [tclaim=ms] [tfinish=ms]: a ready job on n1..nN, nearest
// first.
func (w *scriptWorld) replicas(d *datadriven.TestData) (string, error) {
	var n int
	d.ScanArgs(w.t, "n", &n)
	w.tClaim, w.tFinish = 15_000, 3_600_000
	if d.HasArg("tclaim") {
		var ms int
		d.ScanArgs(w.t, "tclaim", &ms)
		w.tClaim = int64(ms)
	}
	w.now, w.names = 1_000, nil
	w.nodes, w.clients = map[string]*scriptNode{}, map[string]*scriptClient{}
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		w.names = append(w.names, name)
		w.nodes[name] = &scriptNode{st: job.State{Phase: job.Ready}}
	}
	return fmt.Sprintf("r %d, quorum %d, f %d\n", n, Quorum(n), Faults(n)), nil
}

// fault node=nX: the node denies every claim and refuses every confirm.
func (w *scriptWorld) fault(d *datadriven.TestData) (string, error) {
	var name string
	d.ScanArgs(w.t, "node", &name)
	n, ok := w.nodes[name]
	if !ok {
		return "", fmt.Errorf("no node %q", name)
	}
	n.deny = true
	return name + " denies everything\n", nil
}

// view node=nX near=a,b,...: the nodes nX counts among the job's closest
// (its routing table disagrees with the others').
func (w *scriptWorld) view(d *datadriven.TestData) (string, error) {
	var name string
	var near []string
	d.ScanArgs(w.t, "node", &name)
	d.ScanArgs(w.t, "near", &near)
	n, ok := w.nodes[name]
	if !ok {
		return "", fmt.Errorf("no node %q", name)
	}
	n.near = map[string]bool{}
	for _, m := range near {
		n.near[m] = true
	}
	return fmt.Sprintf("%s counts %s as the job's closest\n", name, strings.Join(near, ", ")), nil
}

// claim client=cX [order=...]: the client starts an attempt, asking the
// replicas nearest first (or in the order given: its own view).
func (w *scriptWorld) claim(d *datadriven.TestData) (string, error) {
	var name string
	d.ScanArgs(w.t, "client", &name)
	order := w.names
	if d.HasArg("order") {
		order = nil
		d.ScanArgs(w.t, "order", &order)
	}
	c := &scriptClient{key: bytes.Repeat([]byte{byte(len(w.clients) + 1)}, 32)}
	if old, ok := w.clients[name]; ok {
		c.key = old.key
	}
	c.drv = NewDriver(order, len(w.names))
	c.take(c.drv.Next())
	w.clients[name] = c
	return name + ": " + describe(c.act), nil
}

// ask client=cX [all]: the node the client's driver asks answers it
// (Decide on the node's state); with all, until the driver stops asking.
func (w *scriptWorld) ask(d *datadriven.TestData) (string, error) {
	c, name, err := w.client(d)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for c.act.Ask != "" {
		nd := w.nodes[c.act.Ask]
		dec := Decision{Kind: DontCare}
		switch {
		case nd == nil:
		case nd.deny:
			dec = Decision{Kind: Denied, Reason: "faulty"}
		default:
			temp := nd.temp
			if temp != nil && w.now >= temp.Until {
				temp = nil
			}
			dec = Decide(true, job.Lapse(nd.st, w.now, w.tFinish, 0), temp, c.key, false, w.now, w.tClaim)
			if dec.Temp != nil {
				nd.temp = dec.Temp
			}
		}
		fmt.Fprintf(&b, "%s: %s %s", name, c.act.Ask, dec.Kind)
		if dec.Reason != "" {
			fmt.Fprintf(&b, " (%s)", dec.Reason)
		}
		b.WriteString("\n")
		c.take(c.drv.Answer(c.act.Ask, nd != nil, dec.Kind, nil))
		if len(c.act.Confirm) > 0 && c.act.Ask != "" && d.HasArg("all") {
			b.WriteString(name + ": " + describe(c.act)) // the confirm goes beside the spare's ask
		}
		if !d.HasArg("all") {
			break
		}
	}
	b.WriteString(name + ": " + describe(c.act))
	w.endIfDone(c, &b)
	return b.String(), nil
}

// confirm client=cX: the client sends its confirm, with every reply it
// gathered, to the granting nodes; each checks it (CheckConfirm) and
// makes the claim permanent or refuses.
func (w *scriptWorld) confirm(d *datadriven.TestData) (string, error) {
	c, name, err := w.client(d)
	if err != nil {
		return "", err
	}
	if len(c.confirmTo) == 0 {
		return "", fmt.Errorf("%s has no confirm to send: %s", name, strings.TrimSpace(describe(c.act)))
	}
	if c.start == 0 { // a confirm to spares keeps the claim's start
		c.start = w.now
	}
	var replies []Reply
	for _, g := range c.drv.Replies() {
		replies = append(replies, Reply{Node: g.Node, Kind: g.Kind, At: w.now})
	}
	var b strings.Builder
	targets := c.confirmTo
	c.confirmTo, c.act = nil, Action{Ask: c.act.Ask}
	for _, t := range targets {
		nd := w.nodes[t]
		ok, why := w.check(nd, c, replies)
		fmt.Fprintf(&b, "%s: %s %s\n", name, t, why)
		if a := c.drv.Confirmed(t, ok); a.Done != Pending || len(a.Release) > 0 || len(a.Confirm) > 0 || a.Ask != "" {
			c.take(a)
		}
	}
	b.WriteString(name + ": " + describe(c.act))
	w.endIfDone(c, &b)
	return b.String(), nil
}

// check is one node's judgement of a confirm.
func (w *scriptWorld) check(nd *scriptNode, c *scriptClient, replies []Reply) (bool, string) {
	if nd.deny {
		return false, "refused (faulty)"
	}
	near := func(m string) bool { return nd.near == nil && w.nodes[m] != nil || nd.near[m] }
	known := len(w.names)
	if nd.near != nil {
		known = len(nd.near)
	}
	st, err := CheckConfirm(nd.st, nd.temp, c.key, replies, Quorum(known), near, c.start, w.tFinish, w.now, 60_000)
	if err != nil {
		return false, "refused: " + strings.TrimPrefix(err.Error(), "confirm refused: ")
	}
	nd.st, nd.temp = job.Merge(nd.st, st), nil
	return true, "accepted"
}

// release client=cX: the client gives its claim (or its temporary
// claims) back at every node.
func (w *scriptWorld) release(d *datadriven.TestData) (string, error) {
	c, name, err := w.client(d)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, n := range w.names {
		nd := w.nodes[n]
		if nd.temp != nil && bytes.Equal(nd.temp.Client, c.key) {
			nd.temp = nil
			fmt.Fprintf(&b, "%s: %s temporary claim ended\n", name, n)
		}
		if rel, mine := Release(nd.st, c.key, w.now); mine {
			nd.st = job.Merge(nd.st, rel)
			fmt.Fprintf(&b, "%s: %s claim released\n", name, n)
		}
	}
	return b.String(), nil
}

// endIfDone releases, at the nodes the driver names, the temporary claims
// of an attempt that ended, as the claimer does; a won claim's
// certificate goes to every node that answered (a spare that granted but
// was not asked to confirm learns the claim from it).
func (w *scriptWorld) endIfDone(c *scriptClient, b *strings.Builder) {
	if c.act.Done == Won {
		claimed := job.State{Phase: job.Claimed, Client: c.key, Start: c.start, Deadline: c.start + w.tFinish}
		var certified, refused []string
		for _, g := range c.drv.Replies() {
			nd := w.nodes[g.Node]
			if nd == nil || nd.deny {
				continue
			}
			if nd.near != nil { // the certificate's acceptances must come from nodes it places near
				placed := 0
				for _, a := range c.drv.Accepted() {
					if nd.near[a] {
						placed++
					}
				}
				if placed < Quorum(len(nd.near)) {
					refused = append(refused, g.Node)
					continue
				}
			}
			nd.st = job.Merge(nd.st, claimed)
			if nd.temp != nil && bytes.Equal(nd.temp.Client, c.key) {
				nd.temp = nil
			}
			certified = append(certified, g.Node)
		}
		fmt.Fprintf(b, "certificate to %s\n", strings.Join(certified, ", "))
		if len(refused) > 0 {
			fmt.Fprintf(b, "certificate refused by %s (acceptances from nodes it does not place near)\n", strings.Join(refused, ", "))
		}
	}
	for _, n := range c.act.Release {
		nd := w.nodes[n]
		if nd.temp != nil && bytes.Equal(nd.temp.Client, c.key) {
			nd.temp = nil
		}
		if rel, mine := Release(nd.st, c.key, w.now); mine {
			nd.st = job.Merge(nd.st, rel)
		}
	}
}

// states: each replica's state of the job, as it judges it now.
func (w *scriptWorld) states() string {
	var b strings.Builder
	for _, n := range w.names {
		nd := w.nodes[n]
		st := job.Lapse(nd.st, w.now, w.tFinish, 0)
		fmt.Fprintf(&b, "%s: %s", n, st.Phase)
		if st.Phase == job.Claimed {
			fmt.Fprintf(&b, " by %s", w.clientName(st.Client))
		}
		if nd.temp != nil && w.now < nd.temp.Until {
			fmt.Fprintf(&b, ", temporarily %s's", w.clientName(nd.temp.Client))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (w *scriptWorld) client(d *datadriven.TestData) (*scriptClient, string, error) {
	var name string
	d.ScanArgs(w.t, "client", &name)
	c, ok := w.clients[name]
	if !ok {
		return nil, "", fmt.Errorf("no client %q (claim first)", name)
	}
	return c, name, nil
}

func (w *scriptWorld) clientName(key []byte) string {
	names := make([]string, 0, len(w.clients))
	for n := range w.clients {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if bytes.Equal(w.clients[n].key, key) {
			return n
		}
	}
	return fmt.Sprintf("%x", key[:2])
}

// describe is a driver action in words.
func describe(a Action) string {
	var parts []string
	if len(a.Confirm) > 0 {
		parts = append(parts, "confirms at "+strings.Join(a.Confirm, ", "))
	}
	if a.Ask != "" {
		parts = append(parts, "asks "+a.Ask)
	}
	if a.Done != Pending {
		s := a.Done.String()
		if len(a.Release) > 0 {
			s += ", releasing " + strings.Join(a.Release, ", ")
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "waits\n"
	}
	return strings.Join(parts, " and ") + "\n"
}
