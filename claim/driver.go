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
//
// The asks are sequential only up to the quorum: once q nodes granted
// (no other client can then gather q grants while these temporary claims
// stand), the confirm goes to them at once and the rest of the r asks —
// the spares — run beside it, one at a time; a spare that granted is
// asked to confirm only when a first confirm was refused. An uncontended
// claim at r = 5 thus costs q + 1 round trips (four asks, then the confirm
// beside the fifth ask), not r + 1.
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
	pending  map[string]bool // confirms sent, not answered
	asking   string          // a spare asked while confirming, not answered
	spares   []string        // spares that granted, not yet asked to confirm
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
		return Action{} // waiting for confirm results or a spare's answer
	}
	if len(d.granted) >= d.q {
		d.phase = 1
		d.pending = map[string]bool{}
		for _, n := range d.granted {
			d.pending[n] = true
		}
		return Action{Confirm: append([]string(nil), d.granted...), Ask: d.spare()}
	}
	if len(d.replies) < d.r && d.next < len(d.nodes) {
		n := d.nodes[d.next]
		d.next++
		return Action{Ask: n}
	}
	switch {
	case d.denied > 0:
		return d.end(Lost)
	case len(d.replies) == 0:
		return d.end(Failed)
	case len(d.granted) == 0:
		return d.end(Unknown)
	}
	return d.end(Failed) // too few grants: nodes that do not hold it yet, or silent
}

// spare picks the next spare to ask while confirming ("" when r nodes
// answered or none is left).
func (d *Driver) spare() string {
	if len(d.replies) >= d.r || d.next >= len(d.nodes) {
		return ""
	}
	d.asking = d.nodes[d.next]
	d.next++
	return d.asking
}

// confirming decides, while confirming, what comes next: more spares
// while fewer than r answered; once every confirm and spare answered, won
// with a quorum of acceptances, else a confirm to the spares that
// granted, else failed (every grant released).
func (d *Driver) confirming() Action {
	a := Action{}
	if d.asking == "" && len(d.accepted) < d.q {
		a.Ask = d.spare()
	}
	if len(d.pending) > 0 || d.asking != "" {
		return a
	}
	if len(d.accepted) >= d.q {
		d.phase, d.out = 2, Won
		return Action{Done: Won}
	}
	if len(d.spares) > 0 {
		for _, n := range d.spares {
			d.pending[n] = true
		}
		a.Confirm, d.spares = d.spares, nil
		return a
	}
	return d.end(Failed)
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
	switch {
	case d.phase == 1 && node == d.asking:
		d.asking = ""
		if ok {
			d.gather(node, kind, signed)
			if kind == Granted {
				d.spares = append(d.spares, node)
			}
		}
		return d.confirming()
	case d.phase != 0 || !ok:
		return d.Next()
	}
	d.gather(node, kind, signed)
	if kind == Denied && d.denied > d.r-d.q {
		return d.end(Lost) // even if every other node grants, no quorum
	}
	return d.Next()
}

// gather keeps a node's reply.
func (d *Driver) gather(node string, kind Kind, signed []byte) {
	d.replies = append(d.replies, Gathered{Node: node, Kind: kind, Bytes: signed})
	switch kind {
	case Granted:
		d.granted = append(d.granted, node)
	case Denied:
		d.denied++
	}
}

// Confirmed feeds one node's answer to the confirm. When all have
// answered (and the spares asked beside it): won if a quorum accepted;
// otherwise the spares that granted are asked to confirm, and failing
// that the claim is released at every granting node.
func (d *Driver) Confirmed(node string, ok bool) Action {
	if d.phase != 1 || !d.pending[node] {
		return d.Next()
	}
	delete(d.pending, node)
	if ok {
		d.accepted = append(d.accepted, node)
	}
	return d.confirming()
}
