package sim

import (
	"math"
	"slices"

	"github.com/up-pool/up/dht/keyspace"
)

// ring is a set of live nodes sorted by position: the simulator's model of
// the overlay. Every position prefix is a contiguous range of it, so the
// nodes sharing a prefix with a key, and from them the XOR-closest, are
// found with two binary searches.
type ring struct {
	pos []keyspace.Pos
	id  []int32
}

func (r *ring) len() int { return len(r.pos) }

func (r *ring) search(p keyspace.Pos) int {
	i, _ := slices.BinarySearchFunc(r.pos, p, keyspace.Compare)
	return i
}

func (r *ring) insert(p keyspace.Pos, id int32) {
	i := r.search(p)
	r.pos = slices.Insert(r.pos, i, p)
	r.id = slices.Insert(r.id, i, id)
}

func (r *ring) remove(p keyspace.Pos, id int32) bool {
	i := r.search(p)
	for ; i < len(r.pos) && r.pos[i] == p; i++ {
		if r.id[i] == id {
			r.pos = slices.Delete(r.pos, i, i+1)
			r.id = slices.Delete(r.id, i, i+1)
			return true
		}
	}
	return false
}

// span returns the range [lo, hi) of nodes inside region g.
func (r *ring) span(g keyspace.Region) (int, int) {
	return r.search(g.First()), r.searchAfter(g.Last())
}

func (r *ring) searchAfter(p keyspace.Pos) int {
	i, found := slices.BinarySearchFunc(r.pos, p, keyspace.Compare)
	for found && i < len(r.pos) && r.pos[i] == p {
		i++
	}
	return i
}

// closest appends to out the ids of the n nodes XOR-closest to t, closest
// first. Sorted by position, the nodes' common prefix lengths with t fall
// monotonically on both sides of t's insertion point, so walking outwards
// by falling prefix length collects every node that shares at least as
// many bits with t as the n-th closest does: a contiguous range holding
// the n closest, which is then sorted by distance. If that range grows
// large (a crowd of nodes all equally far), the exact prefix search
// (closestSlow) takes over.
func (r *ring) closest(t keyspace.Pos, n int, out []int32) []int32 {
	n = min(n, len(r.pos))
	if n <= 0 {
		return out
	}
	i := r.search(t)
	l, h := i-1, i
	start, end := i, i
	taken, last := 0, -1
	for {
		cl, ch := -1, -1
		if l >= 0 {
			cl = keyspace.CommonPrefixLen(r.pos[l], t)
		}
		if h < len(r.pos) {
			ch = keyspace.CommonPrefixLen(r.pos[h], t)
		}
		c := max(cl, ch)
		if c < 0 || (taken >= n && c < last) {
			break
		}
		if cl >= ch {
			start, l = l, l-1
		} else {
			end, h = h+1, h+1
		}
		taken, last = taken+1, c
		if taken > n+64 {
			return r.closestSlow(t, n, out)
		}
	}
	for _, k := range keyspace.ClosestIndices(t, r.pos[start:end], n) {
		out = append(out, r.id[start+k])
	}
	return out
}

// closestSlow finds the longest prefix of t holding at least n nodes by
// binary search, and sorts that range by distance.
func (r *ring) closestSlow(t keyspace.Pos, n int, out []int32) []int32 {
	lo, hi := 0, keyspace.Bits // count(lo) >= n holds for lo = 0
	for lo < hi {
		mid := (lo + hi + 1) / 2
		a, b := r.span(keyspace.NewRegion(t, mid))
		if b-a >= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	a, b := r.span(keyspace.NewRegion(t, lo))
	for _, i := range keyspace.ClosestIndices(t, r.pos[a:b], n) {
		out = append(out, r.id[a+i])
	}
	return out
}

// closestOne is the id of the node closest to t, or -1.
func (r *ring) closestOne(t keyspace.Pos) int32 {
	var buf [1]int32
	out := r.closest(t, 1, buf[:0])
	if len(out) == 0 {
		return -1
	}
	return out[0]
}

// lookupWhy says what a lookup is for, to break the lookup load down.
type lookupWhy uint8

const (
	lkSubmit  lookupWhy = iota // a job's first node places it (not among the closest), or the project after a failed store
	lkWrite                    // a writer fetches a keyword region's view (cached)
	lkQuery                    // a client's gateway fetches a keyword region's view (cached)
	lkResult                   // a client finds a job's current nodes (none of its claim's took the result)
	lkHarvest                  // the project finds the finished region, or a job its entry names no node of
	lkBalance                  // a load-balancing probe of a random key (none: probes use the routing table)
	lkCrawl                    // the project crawls the overlay (near questions)
	lkJoin                     // a node joining looks its own position up (node.Join); a restart asks one near question
	nLookupWhy
)

var lookupWhyNames = [nLookupWhy]string{"submit", "index write", "index query", "result", "harvest", "balance", "crawl", "join"}

// lookupModel is the cost of an iterative Kademlia lookup (kad-dht's
// GetClosestPeers with its follow-up: α parallel requests, buckets of k,
// one bit per hop) in a network of n nodes, started by a party sharing c
// leading bits with the key:
//
//	hops h = max(0, ceil(log2(n/k)) − c)  (0 when n <= k)
//	RPCs   = min(n-1, k + α·h)
//
// The lookup narrows the distance by at least a bit per round of α
// requests until the k closest are known; it ends when the k closest have
// all answered, k requests that land on the k nodes closest to the key. So
// k of the RPCs go to the key's k closest nodes and α per hop to random
// nodes sharing ever longer prefixes with the key. A party sharing c bits
// with the key starts from its own bucket c (nodes sharing c+1 bits), so c
// of the hops are already done; from inside the key's neighbourhood only
// the k follow-up requests remain. The latency is h+1 round trips. From a
// random party (c = 0 half the time) at 1,024 nodes that is 20 + 3·6 = 38
// RPCs, the same order as the ~30 go-libp2p-kad-dht needs there (docs/design.md
// cost model); at 10,000 nodes 47.
type lookupModel struct{ alpha, k int }

func (m lookupModel) hops(n int) int {
	if n <= m.k {
		return 0
	}
	return int(math.Ceil(math.Log2(float64(n) / float64(m.k))))
}

// hopsFrom is the hop count of a lookup started c bits from the key.
func (m lookupModel) hopsFrom(n, c int) int { return max(0, m.hops(n)-c) }

// rpcs is the RPC count of one uncached lookup among n nodes from a
// party sharing no bit with the key.
func (m lookupModel) rpcs(n int) int { return m.rpcsFrom(n, 0) }

// rpcsFrom is the RPC count of one uncached lookup among n nodes from a
// party sharing c leading bits with the key.
func (m lookupModel) rpcsFrom(n, c int) int {
	return min(max(n-1, 0), m.k+m.alpha*m.hopsFrom(n, c))
}

// walkCost is the cost of dht.Walk from a party at from to t, as indexnet's
// region views use it: greedy routing by near questions, one at a time.
// The party's table holds BucketSize nodes of the bucket t falls in, so
// the nearest of them shares about log2(K) more bits with t than the party
// does; each answer gains as much again, until the answer names the node
// nearest t, which is asked last (its answer names no nearer node):
//
//	questions = |{c + i·log2(K) : i >= 1, below log2(n)}| + 1
//
// 3 at 1,024 nodes and 4 at 10,000 from a party sharing no bit with t. The
// questions go to random nodes sharing those prefixes with t, the last to
// the node nearest t; none is cached. It returns the latency in ms.
func (s *Sim) walkCost(why lookupWhy, from keyspace.Pos, side int8, t keyspace.Pos) int64 {
	r := s.view(side)
	n := r.len()
	if n == 0 {
		return 0
	}
	s.m.lookups++
	depth := math.Log2(float64(n))
	step := math.Log2(float64(s.c.K))
	rpcs := 0
	for b := float64(keyspace.CommonPrefixLen(from, t)) + step; b < depth; b += step {
		a, z := r.span(keyspace.NewRegion(t, int(b)))
		if a == z {
			break
		}
		s.count(r.id[a+s.e.rng.IntN(z-a)], kLookup, s.c.SizeLookup)
		rpcs++
	}
	s.count(r.closestOne(t), kLookup, s.c.SizeLookup)
	rpcs++
	s.m.lookupRPC[why] += uint64(rpcs)
	return int64(rpcs) * s.rtt()
}

// lognormal is the one-way latency model: exp(N(ln median, σ)), clipped
// to [median/10, 25·median], a heavy-tailed spread resembling wide-area
// (King data set) delays.
func (s *Sim) latency() int64 {
	med := float64(s.c.LatencyMedian.Milliseconds())
	v := math.Exp(math.Log(med) + s.c.LatencySigma*s.e.rng.NormFloat64())
	return int64(min(max(v, med/10), 25*med))
}

// rtt is one request and its reply.
func (s *Sim) rtt() int64 { return s.latency() + s.latency() }

// cached reports whether party's lookup of t is still in its cache, and
// records it if not.
func (s *Sim) cached(cache map[uint64]int64, t keyspace.Pos) bool {
	k := uint64(t[0])<<56 | uint64(t[1])<<48 | uint64(t[2])<<40 | uint64(t[3])<<32 |
		uint64(t[4])<<24 | uint64(t[5])<<16 | uint64(t[6])<<8 | uint64(t[7])
	now := s.e.now
	if until, ok := cache[k]; ok && now < until {
		s.m.cacheHits++
		return true
	}
	if len(cache) >= 512 {
		for kk, u := range cache {
			if u <= now {
				delete(cache, kk)
			}
		}
	}
	cache[k] = now + ms(s.c.LookupCache)
	return false
}

// lookup charges an iterative lookup of t made by a party at position
// from on side side with the given cache (nil: uncached) and returns its
// latency in ms (0 when cached). Routing itself is exact: callers then ask
// the ring.
func (s *Sim) lookup(why lookupWhy, cache map[uint64]int64, from keyspace.Pos, side int8, t keyspace.Pos) int64 {
	if cache != nil && s.cached(cache, t) {
		return 0
	}
	r := s.view(side)
	n := r.len()
	if n == 0 {
		return 0
	}
	s.m.lookups++
	c := keyspace.CommonPrefixLen(from, t)
	h := s.lm.hopsFrom(n, c)
	total := s.lm.rpcsFrom(n, c)
	s.m.lookupRPC[why] += uint64(total)
	// k to the closest nodes.
	s.scratch = r.closest(t, min(s.c.K, total), s.scratch[:0])
	for _, id := range s.scratch {
		s.count(id, kLookup, s.c.SizeLookup)
	}
	rest := total - len(s.scratch)
	if h > 0 {
		depth := math.Log2(float64(n) / float64(s.c.K))
		c0 := min(float64(c), depth)
		for i := 0; rest > 0; i++ {
			bits := int(c0 + float64(i%h)*(depth-c0)/float64(h))
			a, b := r.span(keyspace.NewRegion(t, bits))
			if a == b {
				a, b = 0, n
			}
			for range min(s.c.Alpha, rest) {
				s.count(r.id[a+s.e.rng.IntN(b-a)], kLookup, s.c.SizeLookup)
				rest--
			}
		}
	}
	return int64(h+1) * s.rtt()
}

// ringsAdd puts node id on the ring at its position (a join or a move)
// and has its neighbours hand it their jobs (handOnSoon).
func (s *Sim) ringsAdd(id int32) {
	n := &s.nodes[id]
	s.topo++
	s.rings[0].insert(n.pos, id)
	if s.part {
		s.rings[1+n.side].insert(n.pos, id)
	}
	s.handOnSoon(id)
}

func (s *Sim) ringsDel(id int32) {
	n := &s.nodes[id]
	s.topo++
	s.rings[0].remove(n.pos, id)
	if s.part {
		s.rings[1+n.side].remove(n.pos, id)
	}
}
