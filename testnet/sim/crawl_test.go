package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
)

// crawlRPCs is the near questions charged to the nodes, all purposes.
func crawlRPCs(s *Sim) (n uint64) {
	for i := range s.nodes {
		n += uint64(s.nodes[i].cnt[kLookup])
	}
	return n
}

// TestCrawlFindsEveryNode: a crawl finds every live node (after churn and
// moves too), at the identity and position it has, with about N/10 near
// questions, each charged to a live node as a crawl lookup RPC; right
// after it the project's first node for any key is the key's closest.
func TestCrawlFindsEveryNode(t *testing.T) {
	for _, nodes := range []int{10, 64, 1024} {
		s, err := New(Config{Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		if nodes == 1024 {
			// Some nodes leave, some move, before the crawl.
			for i := int32(0); i < 40; i++ {
				s.crash(i)
			}
			for i := int32(40); i < 60; i++ {
				s.move(i, i+100, randPos(s.e.rng))
			}
		}
		if !s.crawlDue() {
			t.Fatal("no crawl due before the first")
		}
		s.crawl()
		live := s.view(0)
		if got, want := len(s.cv.who), live.len(); got != want {
			t.Fatalf("%d nodes: the crawl found %d of %d live nodes", nodes, got, want)
		}
		for i, p := range s.cv.who {
			n := &s.nodes[p.id]
			if !n.alive || n.gen != p.gen || n.pos != s.cv.r.pos[i] {
				t.Fatalf("%d nodes: view entry %d is node %d gen %d, not the live incarnation", nodes, i, p.id, p.gen)
			}
		}
		rpcs := s.cv.rpcs
		if uint64(rpcs) != s.m.lookupRPC[lkCrawl] || uint64(rpcs) != s.m.nearRPC[lkCrawl] || uint64(rpcs) != crawlRPCs(s) {
			t.Fatalf("%d nodes: %d near questions, charged %d crawl RPCs (%d near) and %d on the nodes",
				nodes, rpcs, s.m.lookupRPC[lkCrawl], s.m.nearRPC[lkCrawl], crawlRPCs(s))
		}
		for i := range s.nodes {
			if s.nodes[i].cnt[kLookup] > 0 && !s.nodes[i].alive {
				t.Fatalf("%d nodes: a crawl question went to node %d, which is gone", nodes, i)
			}
		}
		n := live.len()
		t.Logf("%d live nodes: %d near questions (%.3f per node)", n, rpcs, float64(rpcs)/float64(n))
		if nodes < crawlAnswer && rpcs != 1 {
			t.Fatalf("%d nodes: %d near questions, want 1", nodes, rpcs)
		}
		if nodes == 1024 && (rpcs < n/20 || rpcs > n/4) {
			t.Fatalf("%d nodes: %d near questions, want about N/10", n, rpcs)
		}
		for range 300 {
			key := randPos(s.e.rng)
			c, gen, ok := s.projectNearest(key)
			if want := live.closestOne(key); !ok || c != want || gen != s.nodes[want].gen {
				t.Fatalf("%d nodes: first node %d, want the closest %d", nodes, c, want)
			}
		}
		if s.crawlDue() {
			t.Fatal("a crawl due right after one")
		}
		s.e.now += ms(s.c.CrawlInterval)
		if !s.crawlDue() {
			t.Fatal("no crawl due after the interval")
		}
	}
	s, err := New(Config{Nodes: 64, CrawlInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	s.sendJob(s.newJob(0, s.tFinish))
	if s.crawlDue() || s.cv.crawls != 0 || s.m.lookupRPC[lkCrawl] != 0 {
		t.Fatal("crawling with a negative interval")
	}
}

// TestCrawlStaleView: between crawls the project routes by its stale
// view. A node that moved next to a job's key since is not known, so the
// first node is not the closest and makes a placement lookup (r = 1 here,
// so one moved node suffices); the moved node's old identity is still in
// the view, so a job sent there fails, the project marks it dead, looks
// the job up and skips it from then on; the next crawl knows the new
// identity.
func TestCrawlStaleView(t *testing.T) {
	s, err := New(Config{Nodes: 1024, R: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.crawl()
	var j, first, m int32
	var key keyspace.Pos
	found := false
	for try := 0; try < 20 && !found; try++ {
		j = s.newJob(0, s.tFinish)
		key = s.jobs[j].pos
		first, _, _ = s.projectNearest(key)
		m = s.view(0).id[s.e.rng.IntN(s.view(0).len())]
		if m == first {
			continue
		}
		s.move(m, first, key.FlipBit(250))
		// The project's table may hold the new identity; then the first
		// node is right, and another key is tried.
		found = !s.known(projectTag, s.projPos, 0, m)
	}
	if !found {
		t.Fatal("every moved node is in the project's table")
	}
	if s.view(0).closestOne(key) != m {
		t.Fatalf("moved node %d is not job %d's closest", m, j)
	}
	c, gen, _ := s.projectNearest(key)
	if c != first || gen != s.nodes[first].gen {
		t.Fatalf("first node %d, want the stale view's %d", c, first)
	}
	before, pl := s.m.lookupRPC[lkSubmit], s.m.placeLookups
	s.store(event{kind: evStore, node: c, gen: gen, job: j})
	want := s.lm.rpcsFrom(s.view(0).len(), keyspace.CommonPrefixLen(s.nodes[c].pos, key))
	if s.m.placeLookups != pl+1 || int(s.m.lookupRPC[lkSubmit]-before) != want {
		t.Fatalf("placement: %d lookups, %d RPCs; want 1 lookup of %d RPCs", s.m.placeLookups-pl, s.m.lookupRPC[lkSubmit]-before, want)
	}

	// The moved node's old identity, still in the view.
	old := slices.IndexFunc(s.cv.who, func(p crawlPeer) bool { return p.id == m })
	if old < 0 || s.cv.who[old].gen == s.nodes[m].gen {
		t.Fatal("the view does not hold the moved node's old identity")
	}
	oldPos, oldGen := s.cv.r.pos[old], s.cv.who[old].gen
	j2 := s.newJob(0, s.tFinish)
	s.jobs[j2].pos = oldPos
	if c, gen, _ := s.projectNearest(oldPos); c != m || gen != oldGen {
		t.Fatalf("first node for the old position: %d gen %d, want %d gen %d", c, gen, m, oldGen)
	}
	s.store(event{kind: evStore, node: m, gen: oldGen, job: j2})
	if s.m.failedStores != 1 {
		t.Fatalf("%d failed stores, want 1", s.m.failedStores)
	}
	i := slices.IndexFunc(s.e.heap, func(ev event) bool { return ev.kind == evSubmit && ev.arg == 3 && ev.job == j2 })
	if i < 0 {
		t.Fatal("no retry scheduled after the failed store")
	}
	lk := s.m.lookups
	s.dispatch(s.e.heap[i])
	if !s.markedDead(m, oldGen) || s.m.lookups != lk+1 {
		t.Fatal("the project did not mark the old identity dead and look the job up")
	}
	if c, gen, _ := s.projectNearest(oldPos); c == m && gen == oldGen {
		t.Fatal("the project still picks the dead identity")
	}
	s.e.now += probeBackoff
	if s.markedDead(m, oldGen) {
		t.Fatal("the dead mark outlived its backoff")
	}

	// The next crawl knows the new identity.
	s.e.now += ms(10 * time.Minute)
	s.sendJob(s.newJob(0, s.tFinish))
	if s.cv.crawls != 2 {
		t.Fatalf("%d crawls, want 2", s.cv.crawls)
	}
	if c, gen, _ := s.projectNearest(key); c != m || gen != s.nodes[m].gen {
		t.Fatalf("after the crawl: first node %d, want the moved node %d", c, m)
	}
}
