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

// nearLimit is how many peers a region walk's near question asks for.
const nearLimit = index.NearLimit

// Regions finds and caches the nodes around keywords' wildcard regions:
// the shell of an index.RegionViews, which decides what to ask and what a
// view holds; Regions holds the lock, the clock and the random source,
// and sends the walks and near questions the machine asks for. Safe for
// concurrent use.
type Regions struct {
	d   *dht.DHT
	now func() time.Time

	mu    sync.Mutex
	rng   *rand.Rand
	views *index.RegionViews
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
	return &Regions{d: d, now: now, rng: rand.New(rand.NewPCG(seed, 0x5eed)), views: index.NewRegionViews(bits, ttl.Milliseconds())}
}

// Bits is p.
func (r *Regions) Bits() int { return r.views.Bits() }

// Region is the wildcard region of keyword kw.
func (r *Regions) Region(kw string) keyspace.Region { return r.views.Region(kw) }

// Peers returns the known nodes around kw's region, nearest to its first
// point first: a walk to a random point of the region (dht.Walk: a few
// near questions, the last to the node nearest it; not a lookup, whose 20
// follow-up requests would all land on the region's nodes). Cached for
// the TTL.
func (r *Regions) Peers(ctx context.Context, kw string) ([]peer.ID, error) {
	u := r.start(kw, false, nil)
	if err := r.run(ctx, &u); err != nil {
		return nil, err
	}
	v := u.View()
	out := make([]peer.ID, len(v.Peers))
	for i, p := range v.Peers {
		out[i] = peer.ID(p.ID)
	}
	return out, nil
}

// start begins a use of kw's view now; at, when not nil, is the target
// point.
func (r *Regions) start(kw string, target bool, at *keyspace.Pos) index.RegionUse {
	now := r.now().UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	if at != nil {
		return r.views.StartTargetAt(kw, now, *at)
	}
	if target {
		return r.views.StartTarget(kw, now)
	}
	return r.views.StartView(kw, now)
}

// run steps u to its end: it sends each question the machine asks (the
// view's walk, a refinement's near question) and feeds the answer back.
// The lock is held while the machine steps, not while the network
// answers.
func (r *Regions) run(ctx context.Context, u *index.RegionUse) error {
	for {
		r.mu.Lock()
		ask, ok := r.views.Next(u, r.rng, r.dead)
		r.mu.Unlock()
		if !ok {
			return u.Err()
		}
		var ans []peer.ID
		var err error
		if ask.Walk {
			ans, err = r.d.Walk(ctx, ask.Pos, ask.N)
		} else {
			ans, err = r.near(ctx, peer.ID(ask.Peer), ask.Pos, ask.N)
		}
		peers := make([]index.Peer, len(ans))
		for i, p := range ans {
			peers[i] = index.Peer{ID: string(p), Pos: keyspace.PeerPos([]byte(p))}
		}
		r.mu.Lock()
		r.views.Answer(u, peers, err)
		r.mu.Unlock()
	}
}

// dead reports a peer this party marked dead.
func (r *Regions) dead(id string) bool { return r.d.IsMarkedDead(peer.ID(id)) }

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
	r.views.Invalidate(kw)
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
	now := r.now().UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.views.Stale(kw, age.Milliseconds(), now)
}

// RandomPoint draws a uniform point of kw's region from the source Target
// draws from (tests replay a seed with it: a view's walk draws first,
// then each target).
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
// reaches them. Peers marked dead are skipped too.
func (r *Regions) TargetAvoiding(ctx context.Context, kw string, avoid map[peer.ID]bool) (keyspace.Pos, peer.ID, error) {
	return r.target(ctx, kw, nil, avoid)
}

// EntryPoint is the point of kw's region where the entry under kw of a
// job placed by placeKey (job.PlaceKey) is written (index.EntryPoint):
// the same for every writer.
func (r *Regions) EntryPoint(kw string, placeKey []byte) keyspace.Pos {
	return index.EntryPoint(r.Region(kw), kw, placeKey)
}

// TargetAt is Target for the given point x of kw's region (EntryPoint):
// the node of the view closest to x, not marked dead.
func (r *Regions) TargetAt(ctx context.Context, kw string, x keyspace.Pos) (peer.ID, error) {
	_, at, err := r.target(ctx, kw, &x, nil)
	return at, err
}

func (r *Regions) target(ctx context.Context, kw string, x *keyspace.Pos, avoid map[peer.ID]bool) (keyspace.Pos, peer.ID, error) {
	u := r.start(kw, true, x)
	if err := r.run(ctx, &u); err != nil {
		return keyspace.Pos{}, "", err
	}
	skip := r.dead
	if len(avoid) > 0 {
		skip = func(id string) bool { return avoid[peer.ID(id)] || r.dead(id) }
	}
	at, _ := u.Target(skip)
	return u.Point(), peer.ID(at.ID), nil
}

// RegionNodes returns every node that can hold part of keyword kw's
// entries (the walk a harvest makes): the index nodes to ask about it.
func (c *Client) RegionNodes(ctx context.Context, kw string) ([]peer.ID, error) {
	nodes, _, err := c.walk(dht.DefaultPurpose(ctx, dht.PurposeHarvest), kw)
	if err != nil {
		return nil, fmt.Errorf("walk the region of keyword %q: %w", kw, err)
	}
	return nodes, nil
}
