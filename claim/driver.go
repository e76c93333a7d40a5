package claim

// Outcome is how a claim attempt ended.
type Outcome int

// Outcomes.
const (
	Pending Outcome = iota
	Won             // every asked node granted (or did not care) and confirmed
	Lost            // a node denied: another client has it; grants released
	Unknown         // no node holds the job
	Failed          // too few nodes answered, or a confirm was refused
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
// closest nodes one at a time, nearest first, and decides from their
// replies. It is pure: the caller performs each Action and feeds the
// results back.
type Driver struct {
	nodes   []string // nearest first; more than r so that dead ones can be skipped
	r       int
	next    int
	replies []Gathered
	granted []string
	phase   int // 0 asking, 1 confirming, 2 done
	out     Outcome
	pending map[string]bool
	refused bool
}

// Gathered is a reply a node gave, kept for the confirm: the node and the
// signed bytes.
type Gathered struct {
	Node  string
	Kind  Kind
	Bytes []byte
}

// NewDriver starts an attempt over nodes, nearest to the job first; r
// replies (grants or don't-cares) are needed, fewer only when fewer nodes
// answer at all.
func NewDriver(nodes []string, r int) *Driver {
	return &Driver{nodes: append([]string(nil), nodes...), r: r}
}

// Next returns the next action.
func (d *Driver) Next() Action {
	switch d.phase {
	case 2:
		return Action{Done: d.out}
	case 1:
		return Action{} // waiting for confirm results
	}
	if len(d.replies) == d.r || d.next == len(d.nodes) {
		if len(d.granted) == 0 {
			d.phase, d.out = 2, Unknown
			if len(d.replies) == 0 {
				d.out = Failed
			}
			return Action{Done: d.out}
		}
		d.phase = 1
		d.pending = map[string]bool{}
		for _, n := range d.granted {
			d.pending[n] = true
		}
		return Action{Confirm: append([]string(nil), d.granted...)}
	}
	n := d.nodes[d.next]
	d.next++
	return Action{Ask: n}
}

// Replies are the signed replies gathered, for the confirm message.
func (d *Driver) Replies() []Gathered { return d.replies }

// Answer feeds a node's reply (ok false: the node did not answer and is
// skipped for the next nearest).
func (d *Driver) Answer(node string, ok bool, kind Kind, signed []byte) Action {
	if d.phase != 0 {
		return d.Next()
	}
	if !ok {
		return d.Next()
	}
	if kind == Denied {
		d.phase, d.out = 2, Lost
		return Action{Release: append([]string(nil), d.granted...), Done: Lost}
	}
	d.replies = append(d.replies, Gathered{Node: node, Kind: kind, Bytes: signed})
	if kind == Granted {
		d.granted = append(d.granted, node)
	}
	return d.Next()
}

// Confirmed feeds one node's answer to the confirm. When all have
// answered: won if all accepted; otherwise the claim is released at every
// granting node and the attempt failed.
func (d *Driver) Confirmed(node string, ok bool) Action {
	if d.phase != 1 || !d.pending[node] {
		return d.Next()
	}
	delete(d.pending, node)
	if !ok {
		d.refused = true
	}
	if len(d.pending) > 0 {
		return Action{}
	}
	d.phase = 2
	if d.refused {
		d.out = Failed
		return Action{Release: append([]string(nil), d.granted...), Done: Failed}
	}
	d.out = Won
	return Action{Done: Won}
}
