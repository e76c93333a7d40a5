package sim

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/up-pool/up/dht/keyspace"
)

// The routing-table model. Every party (each node incarnation, and the
// project) has a Kademlia routing table as kad-dht keeps it: bucket b holds
// nodes sharing exactly b leading bits with the party, at most about k of
// them. The tables are not stored; membership is decided on demand:
//
//   - a bucket whose subtree (keyspace.FlipPrefix(party, b)) holds m <= k
//     live nodes knows all of them: a party knows its own neighbourhood
//     completely;
//   - a bucket whose subtree holds m > k live nodes knows each of them
//     independently with probability k/m, decided by a hash of the pair of
//     identities and the run's seed: a uniform sample of k nodes on
//     average, the same sample on every question, deterministic from the
//     seed.
//
// Tables follow the ring: a node that dies or moves leaves every table at
// once and the others of its bucket stand in for it (kad-dht's refresh and
// its eviction of unresponsive peers, taken as instant). Only the
// project's table, asked once per submitted job, is materialised (a few
// hundred ids), and rebuilt when the ring changed.

// partyTag is the identity a table's sample is drawn by.
func partyTag(id int32, gen uint32) uint64 { return uint64(uint32(id))<<32 | uint64(gen) }

// projectTag is the project's identity; no node has it (ids < 2^31).
const projectTag uint64 = 0xffff_ffff_0000_0001

// mix64 is splitmix64's finaliser: a well-spread hash of one word.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// known reports whether node y is in the routing table of the party with
// identity tag at position at, on side side of a partition.
func (s *Sim) known(tag uint64, at keyspace.Pos, side int8, y int32) bool {
	yn := &s.nodes[y]
	b := keyspace.CommonPrefixLen(at, yn.pos)
	if b >= keyspace.Bits {
		return true
	}
	lo, hi := s.view(side).span(keyspace.FlipPrefix(at, b))
	m := hi - lo
	if m <= s.c.K {
		return true
	}
	h := mix64(mix64(s.c.Seed^tag) ^ partyTag(y, yn.gen))
	return h < uint64(math.Ldexp(float64(s.c.K)/float64(m), 64))
}

// nearestLocal appends to out the n nodes closest to t in a party's
// routing table (dht.NearestLocal), closest first; self, when not -1, is
// the party itself (a node counts itself). It walks the live nodes by
// distance to t and keeps those the table holds: no RPC.
func (s *Sim) nearestLocal(tag uint64, at keyspace.Pos, self int32, side int8, t keyspace.Pos, n int, out []int32) []int32 {
	r := s.view(side)
	want := len(out) + n
	done := 0
	for m := n + 8; ; m *= 4 {
		m = min(m, r.len())
		s.walk = r.closest(t, m, s.walk[:0])
		for _, y := range s.walk[done:] {
			if y == self || s.known(tag, at, side, y) {
				if out = append(out, y); len(out) == want {
					return out
				}
			}
		}
		done = len(s.walk)
		if m >= r.len() {
			return out
		}
	}
}

// projectTable is the project's routing table, materialised: the ids and
// positions of the nodes it holds, valid while the ring is unchanged.
type projectTable struct {
	topo  uint64 // s.topo it was built at, plus one (0: never built)
	ids   []int32
	pos   []keyspace.Pos
	built int // rebuilds, for the tests
}

// projectPos is the project's position: its (synthetic) peer ID hashed.
func projectPos(seed uint64) keyspace.Pos {
	var b [15]byte
	copy(b[:], "project")
	binary.BigEndian.PutUint64(b[7:], seed)
	return keyspace.PeerPos(b[:])
}

// projectTable rebuilds the project's table when the ring changed.
func (s *Sim) projectTable() {
	pt := &s.pt
	if pt.topo == s.topo+1 {
		return
	}
	pt.topo, pt.built = s.topo+1, pt.built+1
	pt.ids, pt.pos = pt.ids[:0], pt.pos[:0]
	r := s.view(0)
	for i, id := range r.id {
		if s.known(projectTag, s.projPos, 0, id) {
			pt.ids = append(pt.ids, id)
			pt.pos = append(pt.pos, r.pos[i])
		}
	}
}

// firstCandidates is how many of the nearest known nodes the project
// tries before it looks a job up (project.firstNode's NearestKnown(pos, 4)).
const firstCandidates = 4

// projectNearest is the node incarnation the project sends a job of
// position t to (project.firstNode): of the firstCandidates nodes nearest
// t among its routing table (current positions) and its crawled view (the
// identities and positions of the last crawl, possibly gone or moved
// since), the nearest not marked dead; ok is false when there is none.
// The project is a client: it does not count itself.
func (s *Sim) projectNearest(t keyspace.Pos) (id int32, gen uint32, ok bool) {
	s.projectTable()
	type cand struct {
		pos keyspace.Pos
		p   crawlPeer
	}
	var buf [2 * firstCandidates]cand
	cs := buf[:0]
	for _, i := range keyspace.ClosestIndices(t, s.pt.pos, firstCandidates) {
		y := s.pt.ids[i]
		cs = append(cs, cand{s.pt.pos[i], crawlPeer{y, s.nodes[y].gen}})
	}
	if cv := &s.cv; cv.done {
		var ib [firstCandidates]int32
		for _, w := range cv.r.closest(t, firstCandidates, ib[:0]) {
			c := cand{cv.r.pos[w], cv.who[w]} // the ring's ids index who, in position order
			if !slices.ContainsFunc(cs, func(o cand) bool { return o.p == c.p }) {
				cs = append(cs, c)
			}
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		switch {
		case keyspace.CloserTo(t, a.pos, b.pos):
			return -1
		case keyspace.CloserTo(t, b.pos, a.pos):
			return 1
		}
		return 0
	})
	for _, c := range cs[:min(len(cs), firstCandidates)] {
		if !s.markedDead(c.p.id, c.p.gen) {
			return c.p.id, c.p.gen, true
		}
	}
	return -1, 0, false
}
