package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
)

func randPeers(rng *rand.Rand, n int, in keyspace.Region) []Peer {
	ps := make([]Peer, n)
	for i := range ps {
		ps[i] = Peer{ID: fmt.Sprintf("p%d-%d", n, i), Pos: in.RandomPoint(rng)}
	}
	return ps
}

// nearest is the network: the k peers nearest to target, by brute force.
func nearest(peers []Peer, target keyspace.Pos, k int) []Peer {
	s := slices.Clone(peers)
	slices.SortStableFunc(s, func(a, b Peer) int {
		switch {
		case keyspace.CloserTo(target, a.Pos, b.Pos):
			return -1
		case keyspace.CloserTo(target, b.Pos, a.Pos):
			return 1
		}
		return 0
	})
	return s[:min(k, len(s))]
}

// runWalk drives a walk to the end against the simulated network and
// returns the nodes, the number of questions asked and how many of them
// were about a point not asked about before.
func runWalk(t *testing.T, peers []Peer, region keyspace.Region, k, outside int) (nodes []Peer, asked, distinct int) {
	t.Helper()
	w := NewWalk(region, k, outside)
	points := map[keyspace.Pos]bool{}
	for {
		sub, ok := w.Next()
		if !ok {
			break
		}
		asked++
		if !points[sub.First()] {
			points[sub.First()] = true
			distinct++
		}
		if asked > 2*keyspace.Bits*(len(peers)+1) {
			t.Fatalf("walk does not end after %d questions", asked)
		}
		if sub.Bits < region.Bits || !region.Contains(sub.First()) {
			t.Fatalf("asked about %v, not within %v", sub, region)
		}
		w.Answer(sub, nearest(peers, sub.First(), k))
	}
	return w.Nodes(), asked, len(points)
}

// checkNodes asserts nodes are every peer in region, nearest to its prefix
// first, then the nearest outside peers a walk can see: with answers of k
// peers, those come only from a region holding fewer than k peers.
func checkNodes(t *testing.T, peers []Peer, region keyspace.Region, k, outside int, nodes []Peer) (inside int) {
	t.Helper()
	var in, out []Peer
	for _, p := range nearest(peers, region.Prefix, len(peers)) {
		if region.Contains(p.Pos) {
			in = append(in, p)
		} else {
			out = append(out, p)
		}
	}
	want := append(slices.Clone(in), out[:min(outside, max(0, k-len(in)), len(out))]...)
	ids := map[string]bool{}
	for _, p := range nodes {
		if ids[p.ID] {
			t.Fatalf("%v k=%d: %s listed twice", region, k, p.ID)
		}
		ids[p.ID] = true
	}
	if !slices.Equal(nodes, want) {
		t.Fatalf("%v k=%d outside=%d: %d nodes\n%v\nwant %d (%d inside)\n%v",
			region, k, outside, len(nodes), nodes, len(want), len(in), want)
	}
	return len(in)
}

func TestWalkFindsRegion(t *testing.T) {
	rng := newRNG(9)
	for _, bits := range []int{2, 4, 8} {
		for _, n := range []int{50, 120, 300, 500} {
			peers := randPeers(rng, n, keyspace.Region{})
			for _, k := range []int{4, 8, 20} {
				for _, outside := range []int{0, 3} {
					region := keyspace.NewRegion(keyspace.Region{}.RandomPoint(rng), bits)
					nodes, asked, distinct := runWalk(t, peers, region, k, outside)
					inside := checkNodes(t, peers, region, k, outside, nodes)
					// A split's lower half has the same First point as the
					// split region, so about half the questions repeat one
					// already answered; the distinct ones stay near
					// inside/k, the others add one per split.
					bound := 2*(inside/k+1) + 3
					if outside == 0 {
						t.Logf("bits %d N %3d k %2d: %3d inside, %3d questions, %2d distinct (bound %d)",
							bits, n, k, inside, asked, distinct, bound)
					}
					if distinct > bound || asked != 2*distinct-1 {
						t.Errorf("bits %d N %d k %d: %d questions, %d distinct, for %d inside; bound %d",
							bits, n, k, asked, distinct, inside, bound)
					}
				}
			}
		}
	}
}

// Crowded regions, clustered peers and exact-k boundaries: completeness
// (the question count grows with the depth of shared prefixes).
func TestWalkCrowdedAndClustered(t *testing.T) {
	rng := newRNG(10)
	for iter := range 60 {
		region := keyspace.NewRegion(keyspace.Region{}.RandomPoint(rng), 1+rng.IntN(12))
		peers := randPeers(rng, rng.IntN(200), keyspace.Region{})
		peers = append(peers, randPeers(rng, rng.IntN(150), region)...)
		// A tight cluster deep inside the region, and one just outside.
		deep := keyspace.NewRegion(region.RandomPoint(rng), region.Bits+10+rng.IntN(40))
		for i, p := range randPeers(rng, rng.IntN(30), deep) {
			peers = append(peers, Peer{ID: fmt.Sprint("deep", i), Pos: p.Pos})
		}
		sib := keyspace.NewRegion(region.Prefix.FlipBit(region.Bits-1), region.Bits)
		for i, p := range randPeers(rng, rng.IntN(10), sib) {
			peers = append(peers, Peer{ID: fmt.Sprint("sib", i), Pos: p.Pos})
		}
		for _, k := range []int{2, 5, 20} {
			nodes, asked, _ := runWalk(t, peers, region, k, 4)
			inside := checkNodes(t, peers, region, k, 4, nodes)
			if iter%20 == 0 {
				t.Logf("%v N %d k %d: %d inside, %d questions", region, len(peers), k, inside, asked)
			}
		}
	}
	// Exactly k inside: the region is split once more before the walk
	// knows it has them all.
	region := keyspace.NewRegion(keyspace.Pos{0x40}, 2)
	peers := randPeers(rng, 4, region)
	peers = append(peers, randPeers(rng, 6, keyspace.NewRegion(keyspace.Pos{0xc0}, 2))...)
	nodes, asked, _ := runWalk(t, peers, region, 4, 2)
	checkNodes(t, peers, region, 4, 2, nodes)
	if asked != 3 {
		t.Errorf("exactly k inside: %d questions, want 3", asked)
	}
}

func TestWalkSmall(t *testing.T) {
	region := keyspace.NewRegion(keyspace.Pos{0x80}, 1)
	// No peers at all.
	w := NewWalk(region, 8, 3)
	sub, ok := w.Next()
	if !ok || sub != region {
		t.Fatalf("first question %v %v, want %v", sub, ok, region)
	}
	w.Answer(sub, nil)
	if _, ok := w.Next(); ok {
		t.Fatal("walk continues after an empty answer")
	}
	if n := w.Nodes(); len(n) != 0 {
		t.Fatalf("Nodes = %v", n)
	}
	// Repeated answers and a peer repeated within one answer.
	p := Peer{ID: "a", Pos: keyspace.Pos{0x81}}
	q := Peer{ID: "b", Pos: keyspace.Pos{0x01}}
	r := Peer{ID: "c", Pos: keyspace.Pos{0x7f}} // farther from 0x80 than b
	for outside, want := range [][]Peer{{p}, {p, q}, {p, q, r}, {p, q, r}} {
		w = NewWalk(region, 8, outside)
		sub, _ = w.Next()
		w.Answer(sub, []Peer{r, p, q, p, r})
		w.Answer(sub, []Peer{q, p, r})
		if n := w.Nodes(); !slices.Equal(n, want) {
			t.Fatalf("outside %d: Nodes = %v, want %v", outside, n, want)
		}
	}
}

// With k = 1 a sub-region holding one peer always answers "all inside",
// so the walk halves it down to single positions: complete, but about
// 2·(256−bits) questions per peer inside.
func TestWalkKOne(t *testing.T) {
	rng := newRNG(11)
	region := keyspace.NewRegion(keyspace.Region{}.RandomPoint(rng), 4)
	peers := append(randPeers(rng, 3, region), randPeers(rng, 40, keyspace.Region{})...)
	nodes, asked, distinct := runWalk(t, peers, region, 1, 2)
	inside := checkNodes(t, peers, region, 1, 2, nodes)
	t.Logf("k=1: %d inside, %d questions, %d distinct", inside, asked, distinct)
	if inside > 0 && asked < 2*(keyspace.Bits-region.Bits-8) {
		t.Errorf("k=1: only %d questions; the walk stopped early or k=1 no longer degenerates", asked)
	}
}
