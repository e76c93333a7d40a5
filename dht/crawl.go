package dht

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/wire"
)

// CrawlAnswer is how many peers each near question of a crawl asks for.
const CrawlAnswer = 20

// crawlParallel is how many near questions a crawl has in flight.
const crawlParallel = 8

// crawlAddrTTL is how long a crawl keeps the addresses it learnt in the
// peerstore: the life of a crawled view, with room to spare.
const crawlAddrTTL = 30 * time.Minute

// crawlView is the overlay as the last Crawl found it: every node with its
// position, sorted by position. Replaced whole, never changed in place.
type crawlView struct {
	at  time.Time
	pos []keyspace.Pos
	ids []peer.ID
}

// CrawlStats is what one Crawl did.
type CrawlStats struct {
	Nodes   int // nodes in the view
	RPCs    int // near questions sent
	Failed  int // near questions that failed (their region was asked of the next nearest)
	Elapsed time.Duration
}

// Crawl walks the whole overlay with near questions and keeps what it
// finds as this party's crawled view (NearestKnown), so that a party that
// sends to many random keys (a project submitting a batch) finds each
// key's closest node without a lookup, as go-libp2p-kad-dht's accelerated
// client does. It starts from the whole keyspace: the known peer nearest a
// region's first point is asked for its CrawlAnswer nearest peers to that
// point; when they all lie inside the region the region may hold more, so
// both its halves are asked in turn. A region whose answer reaches outside
// it is known in full (nodes inside a region are nearer its first point
// than any node outside). About N/7 near questions for N nodes (twice
// the leaves, regions of under CrawlAnswer nodes), at most crawlParallel
// at once.
func (d *DHT) Crawl(ctx context.Context) (CrawlStats, error) {
	start := d.env.Now()
	found := map[peer.ID]keyspace.Pos{}
	for _, p := range d.RoutingTablePeers() {
		found[p] = keyspace.PeerPos([]byte(p))
	}
	if d.IsServer() {
		found[d.ep.ID()] = d.self
	}
	if len(found) == 0 {
		return CrawlStats{}, fmt.Errorf("crawl: no peer known")
	}
	var (
		mu    sync.Mutex
		stats CrawlStats
		level = []keyspace.Region{keyspace.NewRegion(keyspace.Pos{}, 0)}
	)
	for len(level) > 0 && ctx.Err() == nil {
		known := newCrawlView(found, time.Time{})
		var next []keyspace.Region
		sem := make(chan struct{}, crawlParallel)
		var wg sync.WaitGroup
		for _, r := range level {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				ps, rpcs, failed := d.crawlRegion(ctx, r, known)
				mu.Lock()
				defer mu.Unlock()
				stats.RPCs += rpcs
				stats.Failed += failed
				for _, p := range ps {
					if p != d.ep.ID() || d.IsServer() {
						found[p] = keyspace.PeerPos([]byte(p))
					}
				}
				if len(ps) >= CrawlAnswer && r.Bits < keyspace.Bits &&
					!slices.ContainsFunc(ps, func(p peer.ID) bool { return !r.Contains(keyspace.PeerPos([]byte(p))) }) {
					lo := keyspace.NewRegion(r.First(), r.Bits+1)
					hi := keyspace.NewRegion(r.First().FlipBit(r.Bits), r.Bits+1)
					next = append(next, lo, hi)
				}
			}()
		}
		wg.Wait()
		level = next
	}
	if err := ctx.Err(); err != nil {
		return stats, fmt.Errorf("crawl: %w", err)
	}
	v := newCrawlView(found, d.env.Now())
	d.crawlMu.Lock()
	d.crawled = v
	d.crawlMu.Unlock()
	stats.Nodes = len(v.ids)
	stats.Elapsed = d.env.Now().Sub(start)
	return stats, nil
}

// crawlRegion asks the known peers nearest r's first point, nearest
// first, until one answers (at most three tries).
func (d *DHT) crawlRegion(ctx context.Context, r keyspace.Region, known *crawlView) (ps []peer.ID, rpcs, failed int) {
	first := r.First()
	for _, i := range known.nearest(first, 3) {
		c := known.ids[i]
		if c == d.ep.ID() {
			return d.NearestLocal(first, CrawlAnswer), rpcs, failed
		}
		rpcs++
		got, err := d.near(ctx, c, &wire.NearRequest{Target: first[:], Count: CrawlAnswer}, crawlAddrTTL)
		if err == nil {
			return got, rpcs, failed
		}
		failed++
	}
	return nil, rpcs, failed
}

// newCrawlView sorts the found peers by position into a view taken at.
func newCrawlView(found map[peer.ID]keyspace.Pos, at time.Time) *crawlView {
	type byPos struct {
		pos keyspace.Pos
		p   peer.ID
	}
	tmp := make([]byPos, 0, len(found))
	for p, pos := range found {
		tmp = append(tmp, byPos{pos, p})
	}
	slices.SortFunc(tmp, func(a, b byPos) int { return keyspace.Compare(a.pos, b.pos) })
	v := &crawlView{at: at, pos: make([]keyspace.Pos, len(tmp)), ids: make([]peer.ID, len(tmp))}
	for i, t := range tmp {
		v.pos[i], v.ids[i] = t.pos, t.p
	}
	return v
}

// CrawledAt is when the crawled view was taken; zero when never.
func (d *DHT) CrawledAt() time.Time {
	d.crawlMu.Lock()
	defer d.crawlMu.Unlock()
	if d.crawled == nil {
		return time.Time{}
	}
	return d.crawled.at
}

// NearestKnown returns up to n peers nearest to pos from the routing table
// and the crawled view together, nearest first; no RPC. Without a crawl it
// is NearestLocal.
func (d *DHT) NearestKnown(pos keyspace.Pos, n int) []peer.ID {
	ps := d.NearestLocal(pos, n)
	d.crawlMu.Lock()
	v := d.crawled
	d.crawlMu.Unlock()
	if v == nil || len(v.ids) == 0 {
		return ps
	}
	for _, i := range v.nearest(pos, n) {
		if !slices.Contains(ps, v.ids[i]) {
			ps = append(ps, v.ids[i])
		}
	}
	SortPeers(pos, ps)
	return ps[:min(n, len(ps))]
}

// nearest returns the indices of the n positions of v nearest to t: those
// of the longest prefix of t that holds at least n of them (a range of
// the sorted positions, found by binary search), sorted by distance.
func (v *crawlView) nearest(t keyspace.Pos, n int) []int {
	span := func(bits int) (int, int) {
		r := keyspace.NewRegion(t, bits)
		first, last := r.First(), r.Last()
		a := sort.Search(len(v.pos), func(i int) bool { return keyspace.Compare(v.pos[i], first) >= 0 })
		b := sort.Search(len(v.pos), func(i int) bool { return keyspace.Compare(v.pos[i], last) > 0 })
		return a, b
	}
	lo, hi := 0, keyspace.Bits // span(lo) holds all, so at least n when any
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if a, b := span(mid); b-a >= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	a, b := span(lo)
	idx := keyspace.ClosestIndices(t, v.pos[a:b], n)
	for i := range idx {
		idx[i] += a
	}
	return idx
}
