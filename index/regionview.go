package index

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/up-pool/up/dht/keyspace"
)

// RegionViews keeps a party's views of the nodes around keywords' wildcard
// regions and decides the near questions a use of a view needs: a walk to
// a random point of the region when no view is fresh, and, in a crowded
// region, one near question at a target point that lies in no sub-region
// known in full. It is the decision half of indexclient.Regions, whose
// shell holds the lock, the clock and the random source, sends the
// questions and feeds the answers back. Pure: time comes in as Unix
// milliseconds, randomness as the caller's source, near answers as values;
// no lock (not safe for concurrent use), no I/O.
//
// A use runs as
//
//	u := views.StartTarget(kw, now)
//	for ask, ok := views.Next(&u, rng, dead); ok; ask, ok = views.Next(&u, rng, dead) {
//		views.Answer(&u, askNetwork(ask))
//	}
//	x, node, err := u.Point(), u.Target(skip), u.Err()
//
// and asks at most two questions: the view's walk, then one refinement.
type RegionViews struct {
	bits  int
	ttl   int64 // ms a view is reused
	views map[string]RegionView
	gen   uint64 // the generation of the last view fetched
}

// RegionView is what is known of the nodes around one keyword's region.
// It is replaced, never changed in place: holders may keep its slices.
type RegionView struct {
	// Peers are the distinct nodes known, nearest to the region's first
	// point first.
	Peers []Peer
	// Fetched is when the view's walk started (Unix ms).
	Fetched int64
	// Crowded: every peer the walk found lies inside the region and its
	// answer was full, so the region may hold more nodes than are known,
	// and the node closest to a point must be asked for at that point.
	Crowded bool
	// Covered lists sub-regions (of a crowded region) all of whose nodes
	// are known, from near answers at points inside them; at most
	// MaxCovered, the latest last.
	Covered []keyspace.Region

	gen uint64 // which fetch this is, so a late refinement finds its view
}

// Ask is a near question a RegionUse needs answered.
type Ask struct {
	// Walk: walk to Pos by greedy routing from the asker's own table
	// (dht.Walk) and answer its N nearest nodes found; else ask Peer.
	Walk bool
	// Peer is the node to ask for its N nearest known peers to Pos.
	Peer string
	Pos  keyspace.Pos
	N    int
}

// NewRegionViews returns an empty set of views of regions of bits bits,
// each reused for ttl ms.
func NewRegionViews(bits int, ttl int64) *RegionViews {
	return &RegionViews{bits: bits, ttl: ttl, views: map[string]RegionView{}}
}

// Bits is p, the bits a region shares with its keyword's centre.
func (rv *RegionViews) Bits() int { return rv.bits }

// Region is the wildcard region of keyword kw.
func (rv *RegionViews) Region(kw string) keyspace.Region { return keyspace.IndexRegion(kw, rv.bits) }

// View returns kw's view if one is held and younger than the TTL at now.
func (rv *RegionViews) View(kw string, now int64) (RegionView, bool) {
	v, ok := rv.views[kw]
	if !ok || now-v.Fetched >= rv.ttl {
		return RegionView{}, false
	}
	return v, true
}

// Invalidate drops kw's view (e.g. after one of its nodes failed).
func (rv *RegionViews) Invalidate(kw string) { delete(rv.views, kw) }

// Stale drops kw's view when it is at least age ms old at now, so the next
// use walks again. It reports whether it did.
func (rv *RegionViews) Stale(kw string, age, now int64) bool {
	v, ok := rv.views[kw]
	if !ok || now-v.Fetched < age {
		return false
	}
	delete(rv.views, kw)
	return true
}

// useState is where a RegionUse stands.
type useState uint8

const (
	useWalk     useState = iota // no fresh view: a walk is to be asked
	useWalking                  // the walk is asked, its answer awaited
	useView                     // the view is known
	useRefining                 // a refinement is asked, its answer awaited
	useDone                     // finished: View, Point and Target are ready
	useFailed                   // the walk failed: Err says why
)

// RegionUse is one use of a keyword's view in progress: the view (walked
// for when none is fresh) and, for a target, a random point of the region
// with the view refined around it when needed. A value the caller keeps
// between Next and Answer; it shares nothing with other uses but the
// views' store, which Answer updates.
type RegionUse struct {
	kw     string
	region keyspace.Region
	now    int64
	target bool
	state  useState
	view   RegionView
	walkAt keyspace.Pos // the walk's point
	x      keyspace.Pos // the target point
	fixed  bool         // x was given (StartTargetAt), not drawn
	ask    Ask          // the question awaited
	err    error
}

// StartView begins a use of kw's view alone at now (Unix ms).
func (rv *RegionViews) StartView(kw string, now int64) RegionUse {
	return rv.start(kw, now, false)
}

// StartTarget begins a use of kw's view at now (Unix ms) that picks a
// uniform random point of the region and the node closest to it: where an
// entry is written or a query is asked.
func (rv *RegionViews) StartTarget(kw string, now int64) RegionUse {
	return rv.start(kw, now, true)
}

// StartTargetAt is StartTarget for the given point x of kw's region (an
// entry's point named by its job and keyword: keyspace.Region.PointFor)
// instead of a random one.
func (rv *RegionViews) StartTargetAt(kw string, now int64, x keyspace.Pos) RegionUse {
	u := rv.start(kw, now, true)
	u.x, u.fixed = x, true
	return u
}

func (rv *RegionViews) start(kw string, now int64, target bool) RegionUse {
	u := RegionUse{kw: kw, region: rv.Region(kw), now: now, target: target}
	if v, ok := rv.View(kw, now); ok {
		u.view, u.state = v, useView
	}
	return u
}

// Next returns the next question u needs answered, or false when u is
// done. It draws from rng the walk's point (when no view is fresh) and
// then the target point (unless StartTargetAt gave it), in that order. A
// refinement is asked of the known node closest to the target point that dead does not report (nil:
// none is dead). Called again before the awaited answer, it returns the
// same question.
func (rv *RegionViews) Next(u *RegionUse, rng *rand.Rand, dead func(id string) bool) (Ask, bool) {
	switch u.state {
	case useWalk:
		// The walk's last question is the node nearest a random point of
		// the region, whose answer is that point's neighbourhood. (Walking
		// to the region's first point made the node nearest it the
		// busiest of the overlay once the region held many nodes: every
		// view ended there.)
		u.walkAt = u.region.RandomPoint(rng)
		u.ask = Ask{Walk: true, Pos: u.walkAt, N: NearLimit}
		u.state = useWalking
		return u.ask, true
	case useWalking, useRefining:
		return u.ask, true
	case useView:
		if !u.target {
			u.state = useDone
			return Ask{}, false
		}
		if !u.fixed {
			u.x = u.region.RandomPoint(rng)
		}
		if !u.view.Crowded || u.view.Covers(u.x) {
			u.state = useDone
			return Ask{}, false
		}
		ask, _ := u.view.Closest(u.x, dead)
		u.ask = Ask{Peer: ask.ID, Pos: u.x, N: NearLimit}
		u.state = useRefining
		return u.ask, true
	}
	return Ask{}, false
}

// Answer feeds u the answer to its question: the peers answered (with
// their positions), or the error the question failed with. A walk that
// fails or finds no node ends u with an error and leaves the views as
// they were; a walk that finds nodes stores the view, fetched at u's
// start. A refinement's answer joins u's view and the stored one, unless
// that was refetched or dropped meanwhile; a failed refinement leaves the
// view as it was. An answer when none is awaited is ignored.
func (rv *RegionViews) Answer(u *RegionUse, answer []Peer, err error) {
	switch u.state {
	case useWalking:
		if err != nil || len(answer) == 0 {
			if err == nil {
				err = errors.New("none known")
			}
			u.err = fmt.Errorf("nodes around keyword %q: %w", u.kw, err)
			u.state = useFailed
			return
		}
		rv.gen++
		v := RegionView{Fetched: u.now, gen: rv.gen}.with(u.region.Prefix, u.walkAt, answer, u.ask.N)
		v.Crowded = len(answer) >= u.ask.N && allInside(u.region, v.Peers)
		rv.views[u.kw] = v
		u.view, u.state = v, useView
	case useRefining:
		u.state = useDone
		if err != nil || len(answer) == 0 {
			return
		}
		first := u.region.Prefix
		if cur, ok := rv.views[u.kw]; ok && cur.gen == u.view.gen {
			rv.views[u.kw] = cur.with(first, u.x, answer, u.ask.N)
		}
		u.view = u.view.with(first, u.x, answer, u.ask.N)
	}
}

// Done reports whether u is finished (Next returns false).
func (u *RegionUse) Done() bool { return u.state == useDone || u.state == useFailed }

// Err is why u failed: its walk failed or found no node.
func (u *RegionUse) Err() error { return u.err }

// View is the view u used, refined around its point if it was.
func (u *RegionUse) View() RegionView { return u.view }

// Point is the target point u drew.
func (u *RegionUse) Point() keyspace.Pos { return u.x }

// Target is the known node closest to u's point that skip does not report
// (nil: none), or the closest of all when skip reports every one; false
// when u found no view.
func (u *RegionUse) Target(skip func(id string) bool) (Peer, bool) {
	if u.state != useDone || len(u.view.Peers) == 0 {
		return Peer{}, false
	}
	return u.view.Closest(u.x, skip)
}

// Covers reports whether the view knows every node of some sub-region
// holding x.
func (v RegionView) Covers(x keyspace.Pos) bool {
	for _, c := range v.Covered {
		if c.Contains(x) {
			return true
		}
	}
	return false
}

// Closest returns the peer of v closest to x that skip does not report
// (nil: none); when skip reports every one, the first of v's peers (the
// nearest to the region's first point). False when v knows no peer.
func (v RegionView) Closest(x keyspace.Pos, skip func(id string) bool) (Peer, bool) {
	if len(v.Peers) == 0 {
		return Peer{}, false
	}
	if skip == nil {
		skip = func(string) bool { return false }
	}
	best := v.Peers[0]
	for _, p := range v.Peers[1:] {
		if skip(p.ID) {
			continue
		}
		if keyspace.CloserTo(x, p.Pos, best.Pos) || skip(best.ID) {
			best = p
		}
	}
	return best, true
}

// with returns a copy of v that also knows answer, a node's nearest peers
// to x asked for limit of them, and the sub-region around x that answer
// shows in full; first is the region's first point, by which peers are
// sorted.
func (v RegionView) with(first, x keyspace.Pos, answer []Peer, limit int) RegionView {
	nv := v
	nv.Peers = mergePeers(first, v.Peers, answer)
	if sub, ok := Coverage(x, answer, limit); ok {
		nv.Covered = AddCovered(slices.Clip(v.Covered), sub)
	}
	return nv
}

// AddCovered appends sub to covered, dropping the oldest beyond
// MaxCovered. It appends in place: clip covered first to keep the
// original.
func AddCovered(covered []keyspace.Region, sub keyspace.Region) []keyspace.Region {
	covered = append(covered, sub)
	if len(covered) > MaxCovered {
		covered = covered[len(covered)-MaxCovered:]
	}
	return covered
}

// mergePeers returns a new slice of the distinct peers (by ID) of known
// and more, sorted by distance to pos.
func mergePeers(pos keyspace.Pos, known, more []Peer) []Peer {
	out := make([]Peer, 0, len(known)+len(more))
	seen := make(map[string]bool, len(known)+len(more))
	for _, list := range [][]Peer{known, more} {
		for _, p := range list {
			if !seen[p.ID] {
				seen[p.ID] = true
				out = append(out, p)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Peer) int {
		return keyspace.Compare(keyspace.Distance(a.Pos, pos), keyspace.Distance(b.Pos, pos))
	})
	return out
}

// allInside reports whether every one of peers lies inside region. If one
// lies outside, the answers reached past the region, so every node inside
// it (all closer to the region's points than any outside) was in them.
func allInside(region keyspace.Region, peers []Peer) bool {
	for _, p := range peers {
		if !region.Contains(p.Pos) {
			return false
		}
	}
	return true
}

// Coverage is the largest sub-region around x whose nodes all appear in
// answer, a node's nearest known peers to x asked for limit of them: the
// whole keyspace when the answer was short (the node knows no more); else
// the positions sharing one bit more with x than the answer's farthest
// peer does (every node there is nearer to x than that peer). ok is false
// when no answered peer lies in that sub-region, which then says nothing
// about where the nodes nearest to its points are, and for an empty
// answer. Only the peers' positions are read.
func Coverage(x keyspace.Pos, answer []Peer, limit int) (sub keyspace.Region, ok bool) {
	if len(answer) == 0 {
		return keyspace.Region{}, false
	}
	if len(answer) < limit {
		return keyspace.Region{}, true
	}
	m := keyspace.Bits
	for _, p := range answer {
		m = min(m, keyspace.CommonPrefixLen(p.Pos, x))
	}
	sub = keyspace.NewRegion(x, m+1)
	for _, p := range answer {
		if sub.Contains(p.Pos) {
			return sub, true
		}
	}
	return keyspace.Region{}, false
}
