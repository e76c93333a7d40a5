package claim

// Outcome is how a claim attempt ended.
type Outcome int

// Outcomes.
const (
	Pending Outcome = iota
	Won             // a quorum of the nodes granted and accepted the confirm
	Lost            // too many nodes denied for a quorum: another client has it; grants released
	Unknown         // no node holds the job
	Failed          // too few nodes granted or accepted the confirm
)

func (o Outcome) String() string {
	return [...]string{"pending", "won", "lost", "unknown", "failed"}[o]
}

// Action is what the driver wants done next.
type Action struct {
	Ask     string   // ask this node for the job (when set)
	Confirm []string // send the confirm, with Replies, to these nodes
	Release []string // release the job at these nodes
	Done    Outcome  // the attempt ended (with Release possibly set)
}

// Driver is the client side of one claim attempt: it asks the job's
// closest nodes one at a time, nearest first, until r of them answered,
// and needs a quorum q = Quorum(r) of grants, then of accepted confirms:
// up to f = Faults(r) nodes that deny, never answer or refuse the confirm
// do not stop it. It gives up (Lost) as soon as more than r − q nodes
// denied, when no quorum is left to win. It is pure: the caller performs
// each Action and feeds the results back.
type Driver struct {
	nodes    []string // nearest first; more than r so that dead ones can be skipped
	r, q     int
	next     int
	replies  []Gathered
	granted  []string
	denied   int
	accepted []string
	phase    int // 0 asking, 1 confirming, 2 done
	out      Outcome
	pending  map[string]bool
}

// Gathered is a reply a node gave, kept for the confirm: the node and the
// signed bytes.
type Gathered struct {
	Node  string
	Kind  Kind
	Bytes []byte
}

// NewDriver starts an attempt over nodes, nearest to the job first; r
// replies are wanted (fewer only when fewer nodes answer at all), and the
// quorum is Quorum(r), or Quorum of the number of nodes when a small
// network has fewer than r.
func NewDriver(nodes []string, r int) *Driver {
	r = max(min(r, len(nodes)), 0)
	return &Driver{nodes: append([]string(nil), nodes...), r: r, q: Quorum(r)}
}

// Next returns the next action.
func (d *Driver) Next() Action {
	switch d.phase {
	case 2:
		return Action{Done: d.out}
	case 1:
		return Action{} // waiting for confirm results
	}
	if len(d.replies) < d.r && d.next < len(d.nodes) {
		n := d.nodes[d.next]
		d.next++
		return Action{Ask: n}
	}
	switch {
	case len(d.granted) >= d.q:
		d.phase = 1
		d.pending = map[string]bool{}
		for _, n := range d.granted {
			d.pending[n] = true
		}
		return Action{Confirm: append([]string(nil), d.granted...)}
	case d.denied > 0:
		return d.end(Lost)
	case len(d.replies) == 0:
		return d.end(Failed)
	case len(d.granted) == 0:
		return d.end(Unknown)
	}
	return d.end(Failed) // too few grants: nodes that do not hold it yet, or silent
}

// end ends the attempt, releasing every grant.
func (d *Driver) end(out Outcome) Action {
	d.phase, d.out = 2, out
	return Action{Release: append([]string(nil), d.granted...), Done: out}
}

// Replies are the signed replies gathered, for the confirm message.
func (d *Driver) Replies() []Gathered { return d.replies }

// Accepted are the nodes that accepted the confirm, in the order they
// answered.
func (d *Driver) Accepted() []string { return d.accepted }

// Answer feeds a node's reply (ok false: the node did not answer and is
// skipped for the next nearest).
func (d *Driver) Answer(node string, ok bool, kind Kind, signed []byte) Action {
	if d.phase != 0 || !ok {
		return d.Next()
	}
	d.replies = append(d.replies, Gathered{Node: node, Kind: kind, Bytes: signed})
	switch kind {
	case Granted:
		d.granted = append(d.granted, node)
	case Denied:
		d.denied++
		if d.denied > d.r-d.q {
			return d.end(Lost) // even if every other node grants, no quorum
		}
	}
	return d.Next()
}

// Confirmed feeds one node's answer to the confirm. When all have
// answered: won if a quorum accepted; otherwise the claim is released at
// every granting node and the attempt failed.
func (d *Driver) Confirmed(node string, ok bool) Action {
	if d.phase != 1 || !d.pending[node] {
		return d.Next()
	}
	delete(d.pending, node)
	if ok {
		d.accepted = append(d.accepted, node)
	}
	if len(d.pending) > 0 {
		return Action{}
	}
	if len(d.accepted) < d.q {
		return d.end(Failed)
	}
	d.phase, d.out = 2, Won
	return Action{Done: Won}
}
