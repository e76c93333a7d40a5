package index

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
)

const testTTL = 60_000 // ms

// newSource is a seeded source and a generator drawing from it; the
// source's state shows what was drawn.
func newSource(seed uint64) (*rand.PCG, *rand.Rand) {
	src := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	return src, rand.New(src)
}

// peersIn returns n peers at random points of region, their IDs tagged.
func peersIn(rng *rand.Rand, n int, region keyspace.Region, tag string) []Peer {
	ps := make([]Peer, n)
	for i := range ps {
		ps[i] = Peer{ID: fmt.Sprintf("%s-%d", tag, i), Pos: region.RandomPoint(rng)}
	}
	return ps
}

// viewNet is the overlay a region view asks: every node knows every
// other, so a walk and a near question at a point both answer the nodes
// nearest it.
type viewNet struct {
	peers   []Peer
	walkErr error           // every walk fails so
	fail    map[string]bool // nodes whose near questions fail
	short   int             // > 0: near answers hold at most short peers
}

func (n *viewNet) answer(a Ask) ([]Peer, error) {
	if a.Walk {
		if n.walkErr != nil {
			return nil, n.walkErr
		}
		return nearest(n.peers, a.Pos, a.N), nil
	}
	if n.fail[a.Peer] {
		return nil, errors.New("no answer")
	}
	k := a.N
	if n.short > 0 {
		k = min(k, n.short)
	}
	return nearest(n.peers, a.Pos, k), nil
}

// run steps u to its end against net and returns the questions asked.
func run(t *testing.T, vs *RegionViews, u *RegionUse, rng *rand.Rand, dead func(string) bool, net *viewNet) []Ask {
	t.Helper()
	var asks []Ask
	for a, ok := vs.Next(u, rng, dead); ok; a, ok = vs.Next(u, rng, dead) {
		if len(asks) == 2 {
			t.Fatalf("a third question %+v after %+v", a, asks)
		}
		asks = append(asks, a)
		ans, err := net.answer(a)
		vs.Answer(u, ans, err)
	}
	if !u.Done() {
		t.Fatal("Next returned false before the use was done")
	}
	return asks
}

// target runs a target use of kw at now and returns it and its questions.
func target(t *testing.T, vs *RegionViews, kw string, now int64, rng *rand.Rand, net *viewNet) (RegionUse, []Ask) {
	t.Helper()
	u := vs.StartTarget(kw, now)
	asks := run(t, vs, &u, rng, nil, net)
	return u, asks
}

// pendingRefinement runs target uses of kw until one asks a refinement,
// and returns it with the refinement awaiting its answer.
func pendingRefinement(t *testing.T, vs *RegionViews, kw string, now int64, rng *rand.Rand, dead func(string) bool, net *viewNet) (RegionUse, Ask) {
	t.Helper()
	for range 1000 {
		u := vs.StartTarget(kw, now)
		for a, ok := vs.Next(&u, rng, dead); ok; a, ok = vs.Next(&u, rng, dead) {
			if !a.Walk {
				return u, a
			}
			ans, err := net.answer(a)
			vs.Answer(&u, ans, err)
		}
	}
	t.Fatal("no point of the region needed a refinement")
	return RegionUse{}, Ask{}
}

// closestOf is the peer of peers closest to x.
func closestOf(peers []Peer, x keyspace.Pos) Peer { return nearest(peers, x, 1)[0] }

func ids(ps []Peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

// crowdedNet is an overlay with inside nodes in the region of bits bits
// of keyword kw, and outside nodes outside it.
func crowdedNet(rng *rand.Rand, kw string, bits, inside, outside int) *viewNet {
	region := keyspace.IndexRegion(kw, bits)
	peers := peersIn(rng, inside, region, "in")
	for i := 0; i < outside; {
		if x := (keyspace.Region{}).RandomPoint(rng); !region.Contains(x) {
			peers = append(peers, Peer{ID: fmt.Sprint("out-", i), Pos: x})
			i++
		}
	}
	return &viewNet{peers: peers}
}

// TestRegionViewUncrowded: a region with fewer nodes than an answer holds
// costs one walk to a random point, drawn before the target point; every
// target after is the true closest node and costs no question for the TTL.
func TestRegionViewUncrowded(t *testing.T) {
	src, rng := newSource(1)
	_, twin := newSource(1)
	net := crowdedNet(newRNG(101), "lhc", 4, 8, 200)
	vs := NewRegionViews(4, testTTL)
	region := vs.Region("lhc")
	u, asks := target(t, vs, "lhc", 1000, rng, net)
	x1, x2 := region.RandomPoint(twin), region.RandomPoint(twin)
	if len(asks) != 1 || !asks[0].Walk || asks[0].Pos != x1 || asks[0].N != NearLimit {
		t.Fatalf("asked %+v, want one walk to the first point drawn", asks)
	}
	v := u.View()
	if v.Crowded || v.Fetched != 1000 || len(v.Peers) != NearLimit {
		t.Fatalf("view crowded %v fetched %d with %d peers", v.Crowded, v.Fetched, len(v.Peers))
	}
	if u.Point() != x2 {
		t.Fatal("target point is not the second point drawn")
	}
	for i := range 30 {
		u, asks := target(t, vs, "lhc", 1000+int64(i)*1000, rng, net)
		got, ok := u.Target(nil)
		if len(asks) != 0 || !ok || got != closestOf(net.peers, u.Point()) {
			t.Fatalf("target %d: %v asking %+v, want %v asking nothing", i, got, asks, closestOf(net.peers, u.Point()))
		}
	}
	// A view use alone draws nothing.
	before := *src
	w := vs.StartView("lhc", 2000)
	if asks := run(t, vs, &w, rng, nil, net); len(asks) != 0 || *src != before || len(w.View().Peers) != NearLimit {
		t.Fatalf("a view use of a fresh view asked %+v or drew", asks)
	}
}

// TestRegionViewCrowded: a region holding more nodes than an answer is
// crowded; a point in no sub-region known in full costs one near question
// of the known node closest to it, whose answer joins the view and covers
// a sub-region; every target is the true closest node, and the covered
// sub-regions keep the questions below one per point.
func TestRegionViewCrowded(t *testing.T) {
	rng := newRNG(2)
	net := crowdedNet(rng, "lhc", 3, 150, 100)
	vs := NewRegionViews(3, testTTL)
	region := vs.Region("lhc")
	_, asks := target(t, vs, "lhc", 0, rng, net)
	v, ok := vs.View("lhc", 0)
	if !ok || !v.Crowded || !asks[0].Walk || !allInside(region, v.Peers) {
		t.Fatalf("view of %d peers crowded %v after %+v", len(v.Peers), v.Crowded, asks)
	}
	const points = 200
	refined := 0
	for i := range points {
		before, _ := vs.View("lhc", 0)
		u, asks := target(t, vs, "lhc", 0, rng, net)
		x := u.Point()
		if want := !before.Covers(x); want != (len(asks) == 1) {
			t.Fatalf("point %d: asked %+v, covered %v", i, asks, !want)
		}
		if len(asks) == 1 {
			refined++
			if ask := asks[0]; ask.Walk || ask.Pos != x || ask.Peer != closestOf(before.Peers, x).ID {
				t.Fatalf("point %d: asked %+v, want the known node closest to %s", i, ask, x.Short())
			}
			after, _ := vs.View("lhc", 0)
			want := before.with(region.Prefix, x, nearest(net.peers, x, NearLimit), NearLimit)
			if !slices.Equal(ids(after.Peers), ids(want.Peers)) || !slices.Equal(after.Covered, want.Covered) {
				t.Fatalf("point %d: the held view is not the answer merged (%d covered, from %d)",
					i, len(after.Covered), len(before.Covered))
			}
		}
		if got, _ := u.Target(nil); got != closestOf(net.peers, x) {
			t.Fatalf("point %d: target %s, the closest is %s", i, got.ID, closestOf(net.peers, x).ID)
		}
	}
	t.Logf("%d points, %d refinements", points, refined)
	if refined < 2 || refined >= points/2 {
		t.Fatalf("%d refinements for %d points", refined, points)
	}
}

// TestRegionViewShortRefinement: a refinement answered with fewer peers
// than asked for (the node knows no more) covers the whole keyspace: no
// point costs a question again.
func TestRegionViewShortRefinement(t *testing.T) {
	rng := newRNG(3)
	net := crowdedNet(rng, "lhc", 2, 100, 50)
	vs := NewRegionViews(2, testTTL)
	u, ask := pendingRefinement(t, vs, "lhc", 0, rng, nil, net)
	net.short = 5
	ans, _ := net.answer(ask)
	vs.Answer(&u, ans, nil)
	v, _ := vs.View("lhc", 0)
	if !v.Covers(keyspace.Region{}.RandomPoint(rng)) || v.Covered[len(v.Covered)-1] != (keyspace.Region{}) {
		t.Fatalf("a short answer covered %v", v.Covered)
	}
	for i := range 20 {
		if _, asks := target(t, vs, "lhc", 0, rng, net); len(asks) != 0 {
			t.Fatalf("use %d asked %+v after a short answer", i, asks)
		}
	}
}

// TestRegionViewFailedRefinement: a refinement that fails leaves the view
// as it was; the target comes from it, and the next point asks again.
func TestRegionViewFailedRefinement(t *testing.T) {
	rng := newRNG(4)
	net := crowdedNet(rng, "lhc", 2, 100, 50)
	vs := NewRegionViews(2, testTTL)
	u, ask := pendingRefinement(t, vs, "lhc", 0, rng, nil, net)
	before, _ := vs.View("lhc", 0)
	vs.Answer(&u, nil, errors.New("time-out"))
	after, _ := vs.View("lhc", 0)
	if !u.Done() || u.Err() != nil || len(after.Peers) != len(before.Peers) || len(after.Covered) != len(before.Covered) {
		t.Fatalf("a failed refinement changed the view (%d peers, %d covered) or failed the use (%v)",
			len(after.Peers), len(after.Covered), u.Err())
	}
	if got, _ := u.Target(nil); got.ID != ask.Peer || got != closestOf(before.Peers, u.Point()) {
		t.Fatalf("target %s, want the known node closest to the point, %s", got.ID, ask.Peer)
	}
	// An empty answer is no answer either.
	u, _ = pendingRefinement(t, vs, "lhc", 0, rng, nil, net)
	vs.Answer(&u, nil, nil)
	if again, _ := vs.View("lhc", 0); len(again.Covered) != len(before.Covered) {
		t.Fatal("an empty refinement covered a sub-region")
	}
}

// TestRegionViewLateRefinement: a refinement answered after its view was
// dropped and fetched anew joins the use's view only; one answered while
// its view is still held joins that too.
func TestRegionViewLateRefinement(t *testing.T) {
	rng := newRNG(5)
	net := crowdedNet(rng, "lhc", 2, 100, 50)
	vs := NewRegionViews(2, testTTL)
	first := vs.Region("lhc").Prefix
	u, ask := pendingRefinement(t, vs, "lhc", 0, rng, nil, net)
	vs.Invalidate("lhc")
	other, _ := target(t, vs, "lhc", 0, rng, net) // same time: a new fetch all the same
	fresh := other.View()
	ans, _ := net.answer(ask)
	own := u.View().with(first, ask.Pos, ans, NearLimit)
	vs.Answer(&u, ans, nil)
	if held, _ := vs.View("lhc", 0); !sameView(held, fresh) {
		t.Fatal("a refinement of a dropped view joined the new one")
	}
	if !sameView(u.View(), own) {
		t.Fatal("the refinement did not join the use's own view")
	}
	u, ask = pendingRefinement(t, vs, "lhc", 0, rng, nil, net)
	before, _ := vs.View("lhc", 0)
	ans, _ = net.answer(ask)
	vs.Answer(&u, ans, nil)
	if held, _ := vs.View("lhc", 0); !sameView(held, before.with(first, ask.Pos, ans, NearLimit)) {
		t.Fatal("a refinement of the held view did not join it")
	}
}

// sameView reports whether a and b know the same peers and sub-regions.
func sameView(a, b RegionView) bool {
	return slices.Equal(ids(a.Peers), ids(b.Peers)) && slices.Equal(a.Covered, b.Covered) &&
		a.Fetched == b.Fetched && a.Crowded == b.Crowded
}

// TestRegionViewTTLInvalidateStale: a view is reused until it is TTL old,
// dropped by Invalidate, and by Stale when at least the given age.
func TestRegionViewTTLInvalidateStale(t *testing.T) {
	rng := newRNG(6)
	net := crowdedNet(rng, "lhc", 4, 8, 100)
	vs := NewRegionViews(4, testTTL)
	walks := func(now int64) bool {
		t.Helper()
		u, asks := target(t, vs, "lhc", now, rng, net)
		if u.Err() != nil {
			t.Fatal(u.Err())
		}
		return len(asks) > 0 && asks[0].Walk
	}
	if !walks(5000) || walks(5000+testTTL-1) || !walks(5000+testTTL) {
		t.Fatal("a view is not reused for exactly its TTL")
	}
	if v, _ := vs.View("lhc", 5000+testTTL); v.Fetched != 5000+testTTL {
		t.Fatalf("the refetched view dates from %d", v.Fetched)
	}
	vs.Invalidate("lhc")
	if !walks(70_000) {
		t.Fatal("an invalidated view is used")
	}
	if vs.Stale("lhc", 10_000, 79_999) || walks(79_999) {
		t.Fatal("Stale dropped a view younger than its age")
	}
	if !vs.Stale("lhc", 10_000, 80_000) || !walks(80_000) {
		t.Fatal("Stale kept a view as old as its age")
	}
	if vs.Stale("none", 0, 80_000) {
		t.Fatal("Stale dropped a view never held")
	}
	if vs.Bits() != 4 || vs.Region("lhc") != keyspace.IndexRegion("lhc", 4) {
		t.Fatal("region of the wrong bits")
	}
}

// TestRegionViewWalkFails: a walk that fails or finds nobody ends the use
// with an error, stores no view, and draws one point only.
func TestRegionViewWalkFails(t *testing.T) {
	src, rng := newSource(7)
	twinSrc, twin := newSource(7)
	down := errors.New("no route")
	vs := NewRegionViews(4, testTTL)
	region := vs.Region("lhc")
	for _, net := range []*viewNet{{walkErr: down}, {}} {
		u, asks := target(t, vs, "lhc", 0, rng, net)
		region.RandomPoint(twin)
		if len(asks) != 1 || u.Err() == nil || !strings.Contains(u.Err().Error(), `"lhc"`) {
			t.Fatalf("asked %+v, error %v", asks, u.Err())
		}
		if net.walkErr != nil && !errors.Is(u.Err(), down) {
			t.Fatalf("error %v does not wrap the walk's", u.Err())
		}
		if _, ok := u.Target(nil); ok {
			t.Fatal("a failed use has a target")
		}
		if _, ok := vs.View("lhc", 0); ok {
			t.Fatal("a failed walk stored a view")
		}
	}
	if *src != *twinSrc {
		t.Fatal("a failed walk drew more than its point")
	}
	// Answering when nothing is awaited changes nothing.
	net := crowdedNet(rng, "lhc", 4, 8, 100)
	u, _ := target(t, vs, "lhc", 0, rng, net)
	vs.Answer(&u, net.peers, nil)
	if v, _ := vs.View("lhc", 0); len(v.Peers) != NearLimit || len(u.View().Peers) != NearLimit {
		t.Fatal("an answer nobody awaited joined the view")
	}
}

// TestRegionViewSkip: a target skips the peers skip reports (asked
// already, or dead) for the next closest, and falls back on the view's
// first peer when it reports all; a refinement is asked of the closest
// live known node.
func TestRegionViewSkip(t *testing.T) {
	rng := newRNG(8)
	net := crowdedNet(rng, "lhc", 4, 8, 100)
	vs := NewRegionViews(4, testTTL)
	u, _ := target(t, vs, "lhc", 0, rng, net)
	v, x := u.View(), u.Point()
	order := nearest(v.Peers, x, len(v.Peers))
	if got, _ := u.Target(func(id string) bool { return id == order[0].ID }); got != order[1] {
		t.Fatalf("skipping the closest: %s, want %s", got.ID, order[1].ID)
	}
	if got, _ := u.Target(func(id string) bool { return id != order[2].ID }); got != order[2] {
		t.Fatalf("all but one skipped: %s, want %s", got.ID, order[2].ID)
	}
	if got, _ := u.Target(func(string) bool { return true }); got != v.Peers[0] {
		t.Fatalf("all skipped: %s, want the view's first %s", got.ID, v.Peers[0].ID)
	}

	src, rng := newSource(9)
	crowd := crowdedNet(rng, "crowd", 2, 100, 50)
	vs = NewRegionViews(2, testTTL)
	target(t, vs, "crowd", 0, rng, crowd) // fetch the view
	held, _ := vs.View("crowd", 0)
	var dead string
	isDead := func(id string) bool { return id == dead }
	for range 1000 {
		saved := *src
		u := vs.StartTarget("crowd", 0)
		a, ok := vs.Next(&u, rng, nil)
		if !ok {
			continue // a covered point
		}
		// Replay the same point with the node asked dead.
		dead, *src = a.Peer, saved
		u = vs.StartTarget("crowd", 0)
		a, _ = vs.Next(&u, rng, isDead)
		if want := nearest(held.Peers, u.Point(), 2)[1]; a.Peer != want.ID {
			t.Fatalf("refinement asked of %s, want the closest live %s (%s dead)", a.Peer, want.ID, dead)
		}
		return
	}
	t.Fatal("no point needed a refinement")
}

// TestCoverage: the sub-region Coverage reports around a point holds no
// node missing from the answer it was computed from (the answerer's n
// nearest to the point), holds the point, and holds an answered node.
func TestCoverage(t *testing.T) {
	rng := newRNG(9)
	checked := 0
	for trial := range 300 {
		universe := make([]Peer, 5+rng.IntN(200))
		for i := range universe {
			id := fmt.Sprintf("peer-%d-%d", trial, i)
			universe[i] = Peer{ID: id, Pos: keyspace.PeerPos([]byte(id))}
		}
		x := keyspace.Region{}.RandomPoint(rng)
		answer := nearest(universe, x, NearLimit)
		sub, ok := Coverage(x, answer, NearLimit)
		if len(answer) < NearLimit {
			if !ok || sub.Bits != 0 {
				t.Fatalf("trial %d: short answer covers %v (%v), want the whole keyspace", trial, sub, ok)
			}
			continue
		}
		if !ok {
			continue
		}
		if !sub.Contains(x) {
			t.Fatalf("trial %d: %v does not hold its point", trial, sub)
		}
		holds := false
		for _, p := range universe {
			in := sub.Contains(p.Pos)
			if in && !slices.Contains(answer, p) {
				t.Fatalf("trial %d: %v holds %s, missing from the answer", trial, sub, p.ID)
			}
			holds = holds || in
		}
		if !holds {
			t.Fatalf("trial %d: %v holds no node", trial, sub)
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d of 300 full answers gave a sub-region", checked)
	}
	if _, ok := Coverage(keyspace.Pos{}, nil, NearLimit); ok {
		t.Fatal("an empty answer covers something")
	}
}

// TestCrowdedView: a view is crowded only when every known peer lies in
// the region; Closest skips dead peers.
func TestCrowdedView(t *testing.T) {
	var ps []Peer
	for i := range 64 {
		id := fmt.Sprintf("node-%d", i)
		ps = append(ps, Peer{ID: id, Pos: keyspace.PeerPos([]byte(id))})
	}
	region := keyspace.NewRegion(ps[0].Pos, 1)
	var inside, outside []Peer
	for _, p := range ps {
		if region.Contains(p.Pos) {
			inside = append(inside, p)
		} else {
			outside = append(outside, p)
		}
	}
	if len(outside) == 0 || !allInside(region, inside) || allInside(region, append(slices.Clone(inside), outside[0])) {
		t.Fatalf("allInside wrong: %d inside, %d outside", len(inside), len(outside))
	}
	x := inside[3].Pos
	sorted := nearest(ps, x, len(ps))
	v := RegionView{Peers: ps}
	if got, _ := v.Closest(x, nil); got != sorted[0] {
		t.Fatalf("closest %s, want %s", got.ID, sorted[0].ID)
	}
	if got, _ := v.Closest(x, func(id string) bool { return id == sorted[0].ID }); got != sorted[1] {
		t.Fatalf("closest live %s, want %s", got.ID, sorted[1].ID)
	}
	if _, ok := (RegionView{}).Closest(x, nil); ok {
		t.Fatal("an empty view has a closest peer")
	}
}

// TestAddCovered: the covered list keeps the latest MaxCovered, and a
// clipped list is not written through.
func TestAddCovered(t *testing.T) {
	var c []keyspace.Region
	for i := range MaxCovered + 5 {
		c = AddCovered(c, keyspace.NewRegion(keyspace.Pos{byte(i)}, 8))
	}
	if len(c) != MaxCovered || c[0].Prefix[0] != 5 || c[MaxCovered-1].Prefix[0] != MaxCovered+4 {
		t.Fatalf("kept %d, first %d", len(c), c[0].Prefix[0])
	}
	base := make([]keyspace.Region, 1, 8)
	AddCovered(slices.Clip(base), keyspace.Region{Bits: 3})
	if base[:2][1].Bits == 3 {
		t.Fatal("a clipped list was written through")
	}
}

// TestRegionViewProperties steps random uses against random overlays,
// answered honestly or not (errors, empty, partial, repeated, far-away
// peers). Whatever the answers: a use asks at most two questions, a walk
// only when no view is fresh and first; a view's peers are distinct and
// sorted by distance to the region's first point; a crowded view's walk
// found only nodes inside the region; every covered sub-region holds a
// known peer (or is the whole keyspace); at most MaxCovered are kept; a
// target is a known peer; a refinement is asked of a known peer. With
// honest answers: every node in a covered sub-region is known, and the
// target is the node truly closest to the point whenever the region holds
// one.
func TestRegionViewProperties(t *testing.T) {
	rng := newRNG(18)
	uses, refined, targeted := 0, 0, 0
	for trial := range 300 {
		bits := 1 + rng.IntN(8)
		vs := NewRegionViews(bits, testTTL)
		kw := fmt.Sprint("kw", trial)
		region := vs.Region(kw)
		universe := append(peersIn(rng, rng.IntN(3)*rng.IntN(40), region, "in"),
			peersIn(rng, rng.IntN(300), keyspace.Region{}, "out")...)
		honest := rng.IntN(2) == 0
		inRegion := slices.ContainsFunc(universe, func(p Peer) bool { return region.Contains(p.Pos) })
		answer := func(a Ask) ([]Peer, error) {
			if honest {
				return nearest(universe, a.Pos, a.N), nil
			}
			switch rng.IntN(5) {
			case 0:
				return nil, errors.New("lost")
			case 1:
				return nil, nil
			}
			var out []Peer
			for range rng.IntN(a.N + 5) {
				if len(universe) > 0 {
					out = append(out, universe[rng.IntN(len(universe))])
				}
			}
			return out, nil
		}
		now := int64(0)
		for range 25 {
			uses++
			now += rng.Int64N(testTTL / 3)
			if rng.IntN(8) == 0 {
				vs.Invalidate(kw)
			}
			held, fresh := vs.View(kw, now)
			u := vs.StartTarget(kw, now)
			var asks []Ask
			var walked []Peer
			for a, ok := vs.Next(&u, rng, nil); ok; a, ok = vs.Next(&u, rng, nil) {
				asks = append(asks, a)
				if len(asks) > 2 {
					t.Fatalf("trial %d: a third question %+v", trial, asks)
				}
				if a.Walk != (len(asks) == 1 && !fresh) {
					t.Fatalf("trial %d: question %d %+v with a fresh view %v", trial, len(asks), a, fresh)
				}
				if !a.Walk {
					refined++
					if !slices.ContainsFunc(u.View().Peers, func(p Peer) bool { return p.ID == a.Peer }) {
						t.Fatalf("trial %d: refinement asked of %s, unknown", trial, a.Peer)
					}
				}
				ans, err := answer(a)
				if a.Walk {
					walked = ans
				}
				vs.Answer(&u, ans, err)
			}
			if u.Err() != nil {
				if honest && len(universe) > 0 {
					t.Fatalf("trial %d: honest walk failed: %v", trial, u.Err())
				}
				if _, ok := vs.View(kw, now); ok {
					t.Fatalf("trial %d: a failed walk left a view", trial)
				}
				continue
			}
			v := u.View()
			checkView(t, trial, region, v)
			if stored, ok := vs.View(kw, now); ok {
				checkView(t, trial, region, stored)
			}
			if walked != nil && v.Crowded && !allInside(region, walked) {
				t.Fatalf("trial %d: crowded view from a walk reaching outside the region", trial)
			}
			if fresh && len(held.Covered) > len(v.Covered) {
				t.Fatalf("trial %d: a use lost covered sub-regions", trial)
			}
			got, ok := u.Target(nil)
			if !ok || !slices.Contains(v.Peers, got) {
				t.Fatalf("trial %d: target %v (%v) not a known peer", trial, got, ok)
			}
			targeted++
			if !honest {
				continue
			}
			for _, c := range v.Covered {
				for _, p := range universe {
					if c.Contains(p.Pos) && !slices.Contains(v.Peers, p) {
						t.Fatalf("trial %d: %v covered, but %s in it is not known", trial, c, p.ID)
					}
				}
			}
			if want := closestOf(universe, u.Point()); inRegion && got != want {
				t.Fatalf("trial %d: target %s, the closest to the point is %s (crowded %v, %d known, %d questions)",
					trial, got.ID, want.ID, v.Crowded, len(v.Peers), len(asks))
			}
		}
	}
	t.Logf("%d uses: %d targets, %d refinements", uses, targeted, refined)
	if refined < uses/50 || targeted < uses/2 {
		t.Fatalf("too few refinements (%d) or targets (%d) in %d uses to mean much", refined, targeted, uses)
	}
}

// checkView asserts what holds of any view, whatever its answers.
func checkView(t *testing.T, trial int, region keyspace.Region, v RegionView) {
	t.Helper()
	if len(v.Peers) == 0 {
		t.Fatalf("trial %d: a view with no peer", trial)
	}
	seen := map[string]bool{}
	for i, p := range v.Peers {
		if seen[p.ID] {
			t.Fatalf("trial %d: %s twice in the view", trial, p.ID)
		}
		seen[p.ID] = true
		if i > 0 && keyspace.CloserTo(region.Prefix, p.Pos, v.Peers[i-1].Pos) {
			t.Fatalf("trial %d: view not sorted by distance to the region's first point", trial)
		}
	}
	if len(v.Covered) > MaxCovered {
		t.Fatalf("trial %d: %d covered sub-regions", trial, len(v.Covered))
	}
	for _, c := range v.Covered {
		if c.Bits > 0 && !slices.ContainsFunc(v.Peers, func(p Peer) bool { return c.Contains(p.Pos) }) {
			t.Fatalf("trial %d: covered %v holds no known peer", trial, c)
		}
	}
}
