package indexclient

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
)

// DefaultRegionBits is p: an index region is every position sharing the
// first p bits with the keyword's centre (keyspace.DefaultIndexBits).
const DefaultRegionBits = keyspace.DefaultIndexBits

// DefaultRegionTTL is how long a region view is reused: 5 min. A view
// costs a lookup and a near question; nodes enter a region seldom (a move
// every 20-60 min at most per node), a view that misses one only misses
// its entries until the refetch, and a failed node drops the view at once
// (Invalidate, Stale). At 90 s, the lookup cache's life, views were a
// third of a 1,024-node overlay's RPCs (simulator, 30 jobs/s).
const DefaultRegionTTL = 5 * time.Minute

// nearLimit is how many peers a region lookup and a near question ask for.
const nearLimit = index.NearLimit

// maxCovered bounds the sub-regions a crowded region's view remembers as
// fully known; the view is refetched after its TTL anyway.
const maxCovered = index.MaxCovered

// Regions finds and caches the nodes around keywords' wildcard regions.
// Safe for concurrent use.
type Regions struct {
	d    *dht.DHT
	bits int
	ttl  time.Duration
	now  func() time.Time

	mu    sync.Mutex
	rng   *rand.Rand
	cache map[string]regionView
}

// regionView is what is known of the nodes around one keyword's region.
// It is replaced, never changed in place: readers may keep its slices.
type regionView struct {
	peers   []peer.ID // nearest to the region's first point first
	fetched time.Time
	// crowded: every known peer lies inside the region and the answers
	// were full, so the region may hold more nodes than are known, and the
	// node closest to a point must be asked for at that point.
	crowded bool
	// covered lists sub-regions (of a crowded region) all of whose nodes
	// are known, from earlier near answers at points inside them.
	covered []keyspace.Region
}

// NewRegions returns a region cache over d with regions of bits bits,
// answers reused for ttl, random points drawn from a source seeded by seed.
func NewRegions(d *dht.DHT, bits int, ttl time.Duration, seed uint64, now func() time.Time) *Regions {
	if bits <= 0 {
		bits = DefaultRegionBits
	}
	if ttl <= 0 {
		ttl = DefaultRegionTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Regions{d: d, bits: bits, ttl: ttl, now: now, rng: rand.New(rand.NewPCG(seed, 0x5eed)), cache: map[string]regionView{}}
}

// Bits is p.
func (r *Regions) Bits() int { return r.bits }

// Region is the wildcard region of keyword kw.
func (r *Regions) Region(kw string) keyspace.Region { return keyspace.IndexRegion(kw, r.bits) }

// Peers returns the known nodes around kw's region, nearest to its first
// point first: a walk to a random point of the region (dht.Walk: a few
// near questions, the last to the node nearest it; not a lookup, whose 20
// follow-up requests would all land on the region's nodes). Cached for
// the TTL.
func (r *Regions) Peers(ctx context.Context, kw string) ([]peer.ID, error) {
	v, err := r.view(ctx, kw)
	if err != nil {
		return nil, err
	}
	return v.peers, nil
}

// view returns the cached view of kw's region, fetching it when absent or
// older than the TTL.
func (r *Regions) view(ctx context.Context, kw string) (regionView, error) {
	now := r.now()
	r.mu.Lock()
	v, ok := r.cache[kw]
	r.mu.Unlock()
	if ok && now.Sub(v.fetched) < r.ttl {
		return v, nil
	}
	region := r.Region(kw)
	// The walk's last question is the node nearest a random point of the
	// region, whose answer is that point's neighbourhood. (Walking to the
	// region's first point made the node nearest it the busiest of the
	// overlay once the region held many nodes: every view ended there.)
	x := r.RandomPoint(kw)
	found, err := r.d.Walk(ctx, x, nearLimit)
	if err != nil || len(found) == 0 {
		return regionView{}, fmt.Errorf("nodes around keyword %q: %w", kw, orNone(err))
	}
	v = regionView{fetched: now}.with(region.Prefix, x, found)
	v.crowded = len(found) >= nearLimit && allInside(region, v.peers)
	r.mu.Lock()
	r.cache[kw] = v
	r.mu.Unlock()
	return v, nil
}

// mergePeers returns a new slice of the distinct peers of known and more,
// sorted by distance to pos.
func mergePeers(pos keyspace.Pos, known, more []peer.ID) []peer.ID {
	out := make([]peer.ID, 0, len(known)+len(more))
	seen := make(map[peer.ID]bool, len(known)+len(more))
	for _, list := range [][]peer.ID{known, more} {
		for _, p := range list {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	dht.SortPeers(pos, out)
	return out
}

// allInside reports whether every one of peers lies inside region. If one
// lies outside, the answers reached past the region, so every node inside
// it (all closer to the region's points than any outside) was in them.
func allInside(region keyspace.Region, peers []peer.ID) bool {
	for _, p := range peers {
		if !region.Contains(keyspace.PeerPos([]byte(p))) {
			return false
		}
	}
	return true
}

// coverage is the largest sub-region around x whose nodes all appear in
// answer, a node's nearest known peers to x asked for limit of them: the
// whole keyspace when the answer was short (the node knows no more); else
// the positions sharing one bit more with x than the answer's farthest
// peer does (every node there is nearer to x than that peer). ok is false
// when no answered peer lies in that sub-region, which then says nothing
// about where the nodes nearest to its points are.
func coverage(x keyspace.Pos, answer []peer.ID, limit int) (sub keyspace.Region, ok bool) {
	if len(answer) == 0 {
		return keyspace.Region{}, false
	}
	if len(answer) < limit {
		return keyspace.Region{}, true
	}
	m := keyspace.Bits
	for _, p := range answer {
		m = min(m, keyspace.CommonPrefixLen(keyspace.PeerPos([]byte(p)), x))
	}
	sub = keyspace.NewRegion(x, m+1)
	for _, p := range answer {
		if sub.Contains(keyspace.PeerPos([]byte(p))) {
			return sub, true
		}
	}
	return keyspace.Region{}, false
}

// covers reports whether the view knows every node of some sub-region
// holding x.
func (v regionView) covers(x keyspace.Pos) bool {
	for _, c := range v.covered {
		if c.Contains(x) {
			return true
		}
	}
	return false
}

// closestTo returns the peer closest to x among peers, skipping those dead
// reports (peers[0] when all are dead).
func closestTo(x keyspace.Pos, peers []peer.ID, dead func(peer.ID) bool) peer.ID {
	best := peers[0]
	bestPos := keyspace.PeerPos([]byte(best))
	for _, p := range peers[1:] {
		if dead(p) {
			continue
		}
		if pp := keyspace.PeerPos([]byte(p)); keyspace.CloserTo(x, pp, bestPos) || dead(best) {
			best, bestPos = p, pp
		}
	}
	return best
}

func orNone(err error) error {
	if err == nil {
		return fmt.Errorf("none known")
	}
	return err
}

// near asks p (or, for this node itself, its routing table) for its n
// nearest known peers to the raw position pos.
func (r *Regions) near(ctx context.Context, p peer.ID, pos keyspace.Pos, n int) ([]peer.ID, error) {
	if p == r.d.ID() {
		return r.d.NearestLocal(pos, n), nil
	}
	return r.d.Near(ctx, p, pos, n)
}

// Invalidate drops the cached view of kw (e.g. after its node failed).
func (r *Regions) Invalidate(kw string) {
	r.mu.Lock()
	delete(r.cache, kw)
	r.mu.Unlock()
}

// MinEmptyRefresh is how old a region view must be before a Find that
// found nothing anywhere drops it (10 s): a view taken while the network
// was still forming (a client started before its nodes knew each other)
// can miss the nodes that hold the entries, for the whole cache TTL.
const MinEmptyRefresh = 10 * time.Second

// Stale drops kw's view when it is at least age old, so the next use
// looks again. It reports whether it did.
func (r *Regions) Stale(kw string, age time.Duration) bool {
	now := r.now()
	r.mu.Lock()
	v, ok := r.cache[kw]
	drop := ok && now.Sub(v.fetched) >= age
	if drop {
		delete(r.cache, kw)
	}
	r.mu.Unlock()
	return drop
}

// RandomPoint draws a uniform point of kw's region.
func (r *Regions) RandomPoint(kw string) keyspace.Pos {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Region(kw).RandomPoint(r.rng)
}

// Target picks a uniform random point x of kw's region and the node
// closest to it: where an entry is written or a query is asked. Usually
// the region's cached view holds every node of the region and the choice
// costs no RPC. When the region is crowded (more nodes than an answer
// holds) and x lies in no sub-region already known in full, the known node
// closest to x is first asked for its nearest peers to x itself (one near
// RPC); the answer joins the cached view.
func (r *Regions) Target(ctx context.Context, kw string) (keyspace.Pos, peer.ID, error) {
	return r.TargetAvoiding(ctx, kw, nil)
}

// TargetAvoiding is Target skipping the peers in avoid (those a Find
// already asked): the next closest known peer to the point is used
// instead, so a reader whose view differs from the writers' (entries
// split between the old and the new closest node around a restart) still
// reaches them.
func (r *Regions) TargetAvoiding(ctx context.Context, kw string, avoid map[peer.ID]bool) (keyspace.Pos, peer.ID, error) {
	v, err := r.view(ctx, kw)
	if err != nil {
		return keyspace.Pos{}, "", err
	}
	x := r.RandomPoint(kw)
	if v.crowded && !v.covers(x) {
		v = r.refine(ctx, kw, v, x)
	}
	skip := r.d.IsMarkedDead
	if len(avoid) > 0 {
		skip = func(p peer.ID) bool { return avoid[p] || r.d.IsMarkedDead(p) }
	}
	return x, closestTo(x, v.peers, skip), nil
}

// refine asks the known node closest to x for its nearest peers to x and
// returns v with them added (and adds them to the cached view, unless that
// was refetched meanwhile). On failure v is returned as it was.
func (r *Regions) refine(ctx context.Context, kw string, v regionView, x keyspace.Pos) regionView {
	ask := closestTo(x, v.peers, r.d.IsMarkedDead)
	ans, err := r.near(ctx, ask, x, nearLimit)
	if err != nil || len(ans) == 0 {
		return v
	}
	first := r.Region(kw).Prefix
	r.mu.Lock()
	if cur, ok := r.cache[kw]; ok && cur.fetched.Equal(v.fetched) {
		r.cache[kw] = cur.with(first, x, ans)
	}
	r.mu.Unlock()
	return v.with(first, x, ans)
}

// with returns a copy of v that also knows answer, a node's nearest peers
// to x, and the sub-region around x that answer shows in full; first is
// the region's first point, by which peers are sorted.
func (v regionView) with(first, x keyspace.Pos, answer []peer.ID) regionView {
	nv := v
	nv.peers = mergePeers(first, v.peers, answer)
	if sub, ok := coverage(x, answer, nearLimit); ok {
		nv.covered = append(v.covered[:len(v.covered):len(v.covered)], sub)
		if len(nv.covered) > maxCovered {
			nv.covered = nv.covered[len(nv.covered)-maxCovered:]
		}
	}
	return nv
}
