package sim

import (
	"github.com/up-pool/up/dht/keyspace"
)

// The project's crawled view of the overlay (dht.Crawl, the "accelerated
// client" of go-libp2p-kad-dht's fullrt) and its liveness marks
// (dht.MarkDead).
//
// Before sending a job, a project whose crawled view is older than
// Config.CrawlInterval crawls the overlay: level by level from the whole
// keyspace, each region is asked of the known node (routing table and
// what earlier levels found) nearest the region's first point: one near
// question (/up/near, crawlAnswer peers, charged as lookup RPCs under
// "crawl"). An answer of crawlAnswer nodes all inside the region means it
// may hold more: both halves are asked at the next level. A region holding
// fewer than crawlAnswer nodes is answered in full (its nodes are nearer
// its first point than any node outside), so the crawl finds every live
// node. The view keeps each node found as the identity (slot and
// incarnation) and position it had then; between crawls nodes move, leave
// and join, and the project's first node for a job (projectNearest) is
// the nearest of its routing table (which follows the ring) and this
// stale snapshot together. The crawl runs on the ring at one instant: its
// own duration (rounds of up to 8 parallel questions) is not simulated.

// crawlAnswer is how many peers a crawl's near question asks for
// (dht.CrawlAnswer).
const crawlAnswer = 20

// probeBackoff is how long the project skips a node whose store failed
// (dht's ProbeBackoff), doubling on each further failure up to 16×, in ms.
const probeBackoff = 30_000

// crawlPeer is one node of a crawled view: the incarnation found.
type crawlPeer struct {
	id  int32
	gen uint32
}

// crawlView is the project's crawled view: every node the last crawl
// found, at the position it had then, as a ring whose ids index who.
type crawlView struct {
	at     int64 // ms of the last crawl
	done   bool  // a crawl was made
	r      ring
	who    []crawlPeer
	found  []int32  // per node slot found by the current crawl: 1 + the level it was found at (0: in the routing table)
	stamp  []uint32 // per node slot: the stamp of the crawl that last found it
	cur    uint32   // the current crawl's stamp
	crawls int      // crawls made
	rpcs   int      // near questions of the last crawl
}

// deadMark is the project's record of a node whose store failed: skipped
// until retryAt (ms); backoff is the current skip length in ms.
type deadMark struct{ retryAt, backoff int64 }

// crawlDue reports whether the project must crawl before sending a job:
// crawling is on and its view is absent or at least CrawlInterval old.
func (s *Sim) crawlDue() bool {
	if s.c.CrawlInterval < 0 {
		return false
	}
	return !s.cv.done || s.e.now-s.cv.at >= ms(s.c.CrawlInterval)
}

// crawl is dht.Crawl by the project (on side 0 of a partition): the
// regions of each level are asked of the nearest node known at the
// level's start; the view becomes every node found, the routing table's
// included.
func (s *Sim) crawl() {
	cv := &s.cv
	v := s.view(0)
	cv.cur++
	if len(cv.found) < len(s.nodes) {
		cv.found = make([]int32, len(s.nodes))
		cv.stamp = make([]uint32, len(s.nodes))
	}
	mark := func(id int32, level int) {
		if cv.stamp[id] != cv.cur {
			cv.stamp[id], cv.found[id] = cv.cur, int32(level)+1
		}
	}
	s.projectTable()
	for _, id := range s.pt.ids {
		mark(id, -1)
	}
	cv.rpcs = 0
	level := []keyspace.Region{keyspace.NewRegion(keyspace.Pos{}, 0)}
	var next []keyspace.Region
	var ans []int32
	for l := 0; len(level) > 0; l++ {
		next = next[:0]
		for _, g := range level {
			first := g.First()
			ask := s.crawlAsk(first, int32(l))
			if ask < 0 {
				continue
			}
			s.near(lkCrawl, ask)
			cv.rpcs++
			ans = v.closest(first, crawlAnswer, ans[:0])
			inside := len(ans) >= crawlAnswer
			for _, id := range ans {
				mark(id, l)
				inside = inside && g.Contains(s.nodes[id].pos)
			}
			if inside && g.Bits < keyspace.Bits {
				next = append(next, keyspace.NewRegion(first, g.Bits+1), keyspace.NewRegion(first.FlipBit(g.Bits), g.Bits+1))
			}
		}
		level, next = next, level
	}
	cv.r, cv.who = ring{}, nil
	for i, id := range v.id {
		if cv.stamp[id] == cv.cur {
			cv.r.pos = append(cv.r.pos, v.pos[i])
			cv.r.id = append(cv.r.id, int32(len(cv.who)))
			cv.who = append(cv.who, crawlPeer{id: id, gen: s.nodes[id].gen})
		}
	}
	cv.at, cv.done = s.e.now, true
	cv.crawls++
}

// crawlAsk is the node a crawl at level l asks about the region whose
// first point is x: the one nearest x among those known at the level's
// start (found at an earlier level, or in the routing table), or -1.
func (s *Sim) crawlAsk(x keyspace.Pos, l int32) int32 {
	cv := &s.cv
	r := s.view(0)
	done := 0
	for m := 8; ; m *= 4 {
		m = min(m, r.len())
		s.walk = r.closest(x, m, s.walk[:0])
		for _, y := range s.walk[done:] {
			if cv.stamp[y] == cv.cur && cv.found[y] <= l {
				return y
			}
		}
		done = len(s.walk)
		if m >= r.len() {
			return -1
		}
	}
}

// markDead records that the project's store to node id's incarnation gen
// failed (dht.MarkDead): it skips the node for probeBackoff, doubling on
// each further failure up to 16×.
func (s *Sim) markDead(id int32, gen uint32) {
	if id < 0 {
		return
	}
	now := s.e.now
	if len(s.dead) >= 4096 {
		for k, d := range s.dead {
			if d.retryAt+16*probeBackoff <= now {
				delete(s.dead, k)
			}
		}
	}
	k := partyTag(id, gen)
	d := s.dead[k]
	switch {
	case d.backoff == 0:
		d.backoff = probeBackoff
	case d.backoff < 16*probeBackoff:
		d.backoff *= 2
	}
	d.retryAt = now + d.backoff
	s.dead[k] = d
}

// markedDead reports whether the project currently skips node id's
// incarnation gen (dht.IsMarkedDead).
func (s *Sim) markedDead(id int32, gen uint32) bool {
	d, ok := s.dead[partyTag(id, gen)]
	return ok && s.e.now < d.retryAt
}
