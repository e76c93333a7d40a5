package index

import (
	"github.com/up-pool/up/dht/keyspace"
)

// The region walk's and region views' constants, one source for the
// nodes (indexnet) and the simulator.
const (
	// NearLimit is how many peers a near question asks for: each
	// question of a region walk, a region view's walk and its refinements.
	NearLimit = 20
	// MaxCovered bounds the sub-regions a crowded region's view remembers
	// as known in full (its near answers showed all their nodes).
	MaxCovered = 64
	// WalkOutside is how many of the nearest nodes outside a region a
	// harvest's walk keeps (NewWalk's outside): they may hold entries
	// written while the region was empty.
	WalkOutside = 3
)

// Peer is a node seen during a walk: an opaque ID and its position.
type Peer struct {
	ID  string
	Pos keyspace.Pos
}

// Walk plans the enumeration of every node of a wildcard region (for a
// harvest, which must reach every node holding part of a keyword's
// entries). Ask a node near a sub-region's first point for its k nearest
// peers to that point: if some answer lies outside the sub-region, the
// answer holds every node inside it (they are nearer than any outside
// one); if all k lie inside, the sub-region may hold more, so it is split
// in two and each half asked. Nodes just outside the region can hold
// entries written while the region was empty, so the nearest outside ones
// are kept too. Pure: the shell does the asking.
type Walk struct {
	region  keyspace.Region
	k       int
	outside int
	pending []keyspace.Region
	inside  map[string]Peer
	near    []Peer // outside the region, nearest to its centre first
}

// NewWalk plans a walk of region with answers of k peers, keeping the
// outside nearest outside peers as well.
func NewWalk(region keyspace.Region, k, outside int) *Walk {
	return &Walk{region: region, k: k, outside: outside, pending: []keyspace.Region{region}, inside: map[string]Peer{}}
}

// Next returns the next sub-region to ask about (ask for the k peers
// nearest to its First point), or false when the walk is complete.
func (w *Walk) Next() (keyspace.Region, bool) {
	if len(w.pending) == 0 {
		return keyspace.Region{}, false
	}
	r := w.pending[0]
	w.pending = w.pending[1:]
	return r, true
}

// Answer records the peers a node gave for sub-region sub.
func (w *Walk) Answer(sub keyspace.Region, peers []Peer) {
	allInside := len(peers) >= w.k
	for _, p := range peers {
		if w.region.Contains(p.Pos) {
			w.inside[p.ID] = p
		} else {
			w.addNear(p)
		}
		if !sub.Contains(p.Pos) {
			allInside = false
		}
	}
	if allInside && sub.Bits < keyspace.Bits {
		lo := keyspace.NewRegion(sub.Prefix, sub.Bits+1)
		hi := keyspace.NewRegion(sub.Prefix.FlipBit(sub.Bits), sub.Bits+1)
		w.pending = append(w.pending, lo, hi)
	}
}

func (w *Walk) addNear(p Peer) {
	for _, q := range w.near {
		if q.ID == p.ID {
			return
		}
	}
	c := w.region.Prefix
	i := 0
	for i < len(w.near) && keyspace.CloserTo(c, w.near[i].Pos, p.Pos) {
		i++
	}
	w.near = append(w.near, Peer{})
	copy(w.near[i+1:], w.near[i:])
	w.near[i] = p
	if len(w.near) > w.outside {
		w.near = w.near[:w.outside]
	}
}

// Nodes returns the peers to visit: every node found inside the region,
// then the nearest outside ones.
func (w *Walk) Nodes() []Peer {
	out := make([]Peer, 0, len(w.inside)+len(w.near))
	for _, p := range w.inside {
		out = append(out, p)
	}
	sortPeersByDistance(w.region.Prefix, out)
	return append(out, w.near...)
}

func sortPeersByDistance(target keyspace.Pos, ps []Peer) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && keyspace.CloserTo(target, ps[j].Pos, ps[j-1].Pos); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}
