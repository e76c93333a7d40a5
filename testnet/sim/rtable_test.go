package sim

import (
	"slices"
	"testing"

	"github.com/up-pool/up/dht/keyspace"
)

// table is a party's whole routing table by brute force: every live node
// known() says it holds.
func table(s *Sim, tag uint64, at keyspace.Pos, side int8) []int32 {
	var out []int32
	for _, id := range s.view(side).id {
		if s.known(tag, at, side, id) {
			out = append(out, id)
		}
	}
	return out
}

// TestRoutingTable: a party knows every node of a bucket holding at most
// k, about k of a larger one, and nearestLocal returns the closest of the
// nodes it knows (itself included), as kad-dht's NearestPeers does.
func TestRoutingTable(t *testing.T) {
	s, err := New(Config{Nodes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	r := s.view(0)
	var big, bigKnown int
	for _, id := range r.id[:40] {
		n := &s.nodes[id]
		tag := partyTag(id, n.gen)
		tab := slices.DeleteFunc(table(s, tag, n.pos, 0), func(y int32) bool { return y == id })
		for b := 0; b < 40; b++ {
			lo, hi := r.span(keyspace.FlipPrefix(n.pos, b))
			known := 0
			for _, y := range tab {
				if keyspace.CommonPrefixLen(n.pos, s.nodes[y].pos) == b {
					known++
				}
			}
			if m := hi - lo; m <= s.c.K && known != m {
				t.Fatalf("node %d bucket %d: knows %d of %d nodes", id, b, known, m)
			} else if m > s.c.K {
				big++
				bigKnown += known
			}
		}
		for range 20 {
			key := randPos(s.e.rng)
			got := s.nearestLocal(tag, n.pos, id, 0, key, 5, nil)
			cand := append(slices.Clone(tab), id)
			var pos []keyspace.Pos
			for _, y := range cand {
				pos = append(pos, s.nodes[y].pos)
			}
			var want []int32
			for _, i := range keyspace.ClosestIndices(key, pos, 5) {
				want = append(want, cand[i])
			}
			if !slices.Equal(got, want) {
				t.Fatalf("node %d: nearestLocal = %v, want %v", id, got, want)
			}
		}
	}
	if avg := float64(bigKnown) / float64(big); avg < 0.8*float64(s.c.K) || avg > 1.2*float64(s.c.K) {
		t.Fatalf("full buckets hold %.1f nodes on average, want about k = %d", avg, s.c.K)
	}
}

// lookupRPCs sums the lookup RPCs charged so far.
func lookupRPCs(s *Sim) (n uint64) {
	for _, v := range s.m.lookupRPC {
		n += v
	}
	return n
}

// TestSubmitLookups: without crawling, the project sends each job to the
// closest node of its routing table at no routing cost; that node places the job without
// a lookup when it is among the job's r closest in its own table (always
// the case when it is among the true r closest: it knows its
// neighbourhood), and otherwise makes one lookup, charged at the model's
// cost from its position, and pushes the job to the true r closest and
// forgets it. A failed store makes the project look the job up.
func TestSubmitLookups(t *testing.T) {
	for _, nodes := range []int{64, 1024} {
		s, err := New(Config{Nodes: nodes, CrawlInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		near, far := 0, 0
		for range 400 {
			j := s.newJob(0, s.tFinish)
			key := s.jobs[j].pos
			before, lk := lookupRPCs(s), s.m.lookups
			c, _, _ := s.projectNearest(key)
			s.sendJob(j)
			if lookupRPCs(s) != before || s.m.lookups != lk {
				t.Fatal("sending a job to the project's nearest known node charged a lookup")
			}
			truth := s.view(0).closest(key, s.c.R, nil)
			cn := &s.nodes[c]
			view := s.nearestLocal(partyTag(c, cn.gen), cn.pos, c, 0, key, s.c.R, nil)
			s.store(event{kind: evStore, node: c, gen: cn.gen, job: j})
			got := lookupRPCs(s) - before
			switch {
			case slices.Contains(view, c):
				near++
				if got != 0 || s.m.lookups != lk {
					t.Fatalf("%d nodes: node %d is among job %d's closest in its table, yet %d lookup RPCs", nodes, c, j, got)
				}
				if slices.Contains(truth, c) && !slices.Equal(view, truth) {
					t.Fatalf("%d nodes: node %d among the true closest %v sees %v", nodes, c, truth, view)
				}
			default:
				far++
				if slices.Contains(truth, c) {
					t.Fatalf("%d nodes: node %d among the true closest does not see itself there", nodes, c)
				}
				want := s.lm.rpcsFrom(s.view(0).len(), keyspace.CommonPrefixLen(cn.pos, key))
				if int(got) != want || s.m.lookups != lk+1 {
					t.Fatalf("%d nodes: placement lookup charged %d RPCs in %d lookups, want %d in 1", nodes, got, s.m.lookups-lk, want)
				}
				if cn.jobs[j] != nil {
					t.Fatalf("%d nodes: node %d outside the closest kept job %d", nodes, c, j)
				}
			}
		}
		t.Logf("%d nodes: %d placed from the first node's table, %d looked up", nodes, near, far)
		if near == 0 || (nodes > 100 && far == 0) {
			t.Fatalf("%d nodes: %d placed locally, %d looked up: the test saw only one case", nodes, near, far)
		}
		// A failed store: the project looks the job up, from its position.
		j := s.newJob(0, s.tFinish)
		before := lookupRPCs(s)
		s.resubmit(j)
		want := s.lm.rpcsFrom(s.view(0).len(), keyspace.CommonPrefixLen(s.projPos, s.jobs[j].pos))
		if got := lookupRPCs(s) - before; int(got) != want {
			t.Fatalf("%d nodes: the project's fallback lookup charged %d RPCs, want %d", nodes, got, want)
		}
	}
}

// TestProjectTableFollowsRing: the project's table is rebuilt when the
// ring changes, and never holds a node that left.
func TestProjectTableFollowsRing(t *testing.T) {
	s, err := New(Config{Nodes: 300})
	if err != nil {
		t.Fatal(err)
	}
	key := randPos(s.e.rng)
	c, _, _ := s.projectNearest(key)
	built := s.pt.built
	if s.projectNearest(randPos(s.e.rng)); s.pt.built != built {
		t.Fatal("the project's table was rebuilt without a ring change")
	}
	s.crash(c)
	if got, _, _ := s.projectNearest(key); got == c || s.pt.built != built+1 {
		t.Fatalf("after node %d left: nearest %d, %d rebuilds", c, got, s.pt.built-built)
	}
	if slices.Contains(s.pt.ids, c) {
		t.Fatal("the project's table holds a node that left")
	}
}
