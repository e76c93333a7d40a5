package indexclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/wire"
)

// ErrNoJob reports a query that found nothing at any of the points tried.
var ErrNoJob = errors.New("no job found")

// Client asks the index: Find for a worker's jobs, Harvest for a
// project's finished ones. Any party (node, client, project) has one.
type Client struct {
	d       *dht.DHT
	regions *Regions
	local   Local // this node's own index server, or nil
	tries   int

	mu  sync.Mutex
	old map[peer.ID]bool // nodes that do not serve ProtoIndexQuerySkip
}

// Local is a node's own index server, asked in-process rather than over
// the network when the point queried falls to the node itself
// (indexnet.Server).
type Local interface {
	Query(*wire.IndexQueryRequest) (*wire.IndexQueryResponse, error)
	QuerySkipping(*wire.IndexQuerySkipRequest) (*wire.IndexQueryResponse, error)
}

// NewClient returns an index client; local is the party's own index
// server when it is a node (nil otherwise). tries is how many random points Find asks
// before reporting ErrNoJob (default 3).
func NewClient(d *dht.DHT, regions *Regions, local Local, tries int) *Client {
	if tries <= 0 {
		tries = 3
	}
	return &Client{d: d, regions: regions, local: local, tries: tries}
}

// Regions is the client's region cache.
func (c *Client) Regions() *Regions { return c.regions }

// ask sends one query to index node at.
func (c *Client) ask(ctx context.Context, at peer.ID, req *wire.IndexQueryRequest) (*wire.IndexQueryResponse, error) {
	if at == c.d.ID() && c.local != nil {
		return c.local.Query(req)
	}
	var resp wire.IndexQueryResponse
	if err := c.d.Endpoint().Call(ctx, at, wire.ProtoIndexQuery, req, wire.MaxIndexFrame, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Find asks the index for up to n jobs matching query: at a random point
// of the region of the query's primary keyword, and at fresh random points
// while nothing is found, up to the client's tries, each time at the
// closest known node to the point not yet asked.
func (c *Client) Find(ctx context.Context, query string, n int) ([]wire.IndexHit, error) {
	hits, _, err := c.FindSkipping(ctx, query, n, Skipping{})
	return hits, err
}

// Skipping is what a worker's query passes over.
type Skipping struct {
	// Skip are jobs the worker will not take: no node serves them to it.
	Skip [][]byte
	// Decline are jobs Node served the worker that it will not take:
	// Node, asked first, ends their quarantine (others skip them).
	Decline [][]byte
	Node    peer.ID
	// Reasons are why each job of Decline is declined, in order (nil:
	// not said); Node records them for the project to read.
	Reasons []wire.SkipReason
	// Wait, when set, is called before each query to a node (a client
	// pacing itself under the nodes' per-client query limit); its error
	// ends the search.
	Wait func(ctx context.Context, node peer.ID) error
}

// FindSkipping is Find for a worker that will not take some jobs; it also
// reports the index node that answered (to decline its entries at). Nodes
// that do not know ProtoIndexQuerySkip are asked ProtoIndexQuery.
func (c *Client) FindSkipping(ctx context.Context, query string, n int, sk Skipping) ([]wire.IndexHit, peer.ID, error) {
	ctx = dht.DefaultPurpose(ctx, dht.PurposeIndexQuery)
	q, err := index.Parse(query)
	if err != nil {
		return nil, "", err
	}
	primary, err := q.Primary()
	if err != nil {
		return nil, "", err
	}
	if n < 1 || n > wire.MaxIndexHits {
		return nil, "", fmt.Errorf("find %d jobs: want 1..%d", n, wire.MaxIndexHits)
	}
	if len(sk.Skip)+len(sk.Decline) > wire.MaxQuerySkips {
		return nil, "", fmt.Errorf("find skipping %d jobs: want at most %d", len(sk.Skip)+len(sk.Decline), wire.MaxQuerySkips)
	}
	req := &wire.IndexQuerySkipRequest{Query: wire.IndexQueryRequest{Query: q.String(), Keyword: primary, N: uint16(n)}}
	var lastErr error
	asked := map[peer.ID]bool{}
	for try := range c.tries {
		at := sk.Node
		req.Skip, req.Decline, req.Reasons = sk.Skip, sk.Decline, nil
		if len(sk.Reasons) == len(sk.Decline) {
			req.Reasons = sk.Reasons
		}
		if try > 0 || at == "" || c.d.IsMarkedDead(at) {
			if _, at, err = c.regions.TargetAvoiding(ctx, primary, asked); err != nil {
				return nil, "", err
			}
			req.Skip, req.Decline, req.Reasons = append(slices.Clip(sk.Skip), sk.Decline...), nil, nil // declined at sk.Node only
		}
		asked[at] = true
		if sk.Wait != nil {
			if err := sk.Wait(ctx, at); err != nil {
				return nil, "", fmt.Errorf("find %q at %s: %w", query, at, err)
			}
		}
		resp, err := c.askSkipping(ctx, at, req)
		var reply *wire.Error
		if errors.As(err, &reply) {
			return nil, "", fmt.Errorf("find %q at %s: %w", query, at, err) // refused (e.g. rate limited): do not retry
		}
		if err != nil {
			lastErr = err
			c.d.MarkDead(at)
			c.regions.Invalidate(primary)
			continue
		}
		if len(resp.Hits) > 0 {
			return resp.Hits, at, nil
		}
	}
	// Nothing anywhere we looked: a view older than MinEmptyRefresh is
	// looked up again next time (it may predate the nodes that hold the
	// entries).
	c.regions.Stale(primary, MinEmptyRefresh)
	if lastErr != nil {
		return nil, "", fmt.Errorf("%w for %q (%v)", ErrNoJob, query, lastErr)
	}
	return nil, "", fmt.Errorf("%w for %q", ErrNoJob, query)
}

// askSkipping sends a worker's query to index node at: by
// ProtoIndexQuerySkip when it names jobs to pass over and at serves that
// protocol, else by ProtoIndexQuery.
func (c *Client) askSkipping(ctx context.Context, at peer.ID, req *wire.IndexQuerySkipRequest) (*wire.IndexQueryResponse, error) {
	if len(req.Skip)+len(req.Decline) == 0 || c.noSkip(at) {
		return c.ask(ctx, at, &req.Query)
	}
	if at == c.d.ID() && c.local != nil {
		return c.local.QuerySkipping(req)
	}
	var resp wire.IndexQueryResponse
	err := c.d.Endpoint().Call(ctx, at, wire.ProtoIndexQuerySkip, req, wire.MaxIndexFrame, &resp)
	if overlay.NotServed(err) {
		c.mu.Lock()
		if c.old == nil || len(c.old) >= 4096 {
			c.old = map[peer.ID]bool{}
		}
		c.old[at] = true // a node of an older version: ask it the old way
		c.mu.Unlock()
		return c.ask(ctx, at, &req.Query)
	}
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// noSkip reports a node known not to serve ProtoIndexQuerySkip.
func (c *Client) noSkip(at peer.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.old[at]
}

// HarvestStats reports a harvest.
type HarvestStats struct {
	Nodes      int // index nodes visited
	Questions  int // near RPCs of the region walk
	Pages      int // query pages fetched
	Entries    int // distinct entries delivered
	Duplicates int // entries seen on more than one node
}

// Harvest delivers every entry matching query from every node that holds
// part of its primary keyword's region (a walk of the region's nodes, not
// random sampling), each once, in pages of up to pageSize, to visit.
func (c *Client) Harvest(ctx context.Context, query string, pageSize int, visit func([]wire.IndexHit) error) (HarvestStats, error) {
	ctx = dht.DefaultPurpose(ctx, dht.PurposeHarvest)
	var st HarvestStats
	q, err := index.Parse(query)
	if err != nil {
		return st, err
	}
	primary, err := q.Primary()
	if err != nil {
		return st, err
	}
	if pageSize < 1 || pageSize > wire.MaxIndexHits {
		pageSize = wire.MaxIndexHits
	}
	seen := map[string]bool{}
	asked := map[peer.ID]bool{}
	var errs []error
	// A node that does not answer is marked dead and the region walked
	// again without it: its entries' writers placed them on the next
	// nearest nodes, which the first walk may not have listed (with few
	// nodes in and near the region, the dead node can be the only one).
	for walks := 0; walks < 3; walks++ {
		nodes, questions, err := c.walk(ctx, primary)
		st.Questions += questions
		if err != nil {
			if walks == 0 {
				return st, err
			}
			errs = append(errs, err)
			break
		}
		failed := false
		for _, at := range nodes {
			if asked[at] {
				continue
			}
			asked[at] = true
			failure, err := c.harvestAt(ctx, at, q, primary, pageSize, seen, visit, &st)
			if err != nil {
				return st, err
			}
			if failure != nil {
				failed = true
				errs = append(errs, failure)
			}
		}
		if !failed {
			return st, nil
		}
	}
	return st, errors.Join(errs...)
}

// harvestAt pages through one index node's entries of primary matching q,
// visiting those not seen before. failure says why the node failed (it is
// then marked dead); err is visit's error.
func (c *Client) harvestAt(ctx context.Context, at peer.ID, q *index.Query, primary string, pageSize int, seen map[string]bool,
	visit func([]wire.IndexHit) error, st *HarvestStats) (failure, err error) {
	st.Nodes++
	req := &wire.IndexQueryRequest{Query: q.String(), Keyword: primary, N: uint16(pageSize), Page: true}
	for {
		resp, err := c.ask(ctx, at, req)
		if err != nil {
			if ctx.Err() == nil {
				c.d.MarkDead(at)
			}
			return fmt.Errorf("harvest %q at %s: %w", primary, at, err), nil
		}
		st.Pages++
		var fresh []wire.IndexHit
		for _, h := range resp.Hits {
			if seen[string(h.Job)] {
				st.Duplicates++
				continue
			}
			seen[string(h.Job)] = true
			fresh = append(fresh, h)
		}
		if len(fresh) > 0 {
			st.Entries += len(fresh)
			if err := visit(fresh); err != nil {
				return nil, err
			}
		}
		if !resp.More || len(resp.Hits) == 0 {
			return nil, nil
		}
		last := resp.Hits[len(resp.Hits)-1]
		req.AfterCreated, req.AfterJob = last.Created, last.Job
	}
}

// walk finds every node that can hold part of kw's entries: every node of
// its region; or, when the region holds none, every node sharing the
// region's prefix length with the nearest outside node (they tie on the
// region's bits, so points of the region divide among them), found by a
// second walk.
func (c *Client) walk(ctx context.Context, kw string) ([]peer.ID, int, error) {
	start, err := c.regions.Peers(ctx, kw)
	if err != nil {
		return nil, 0, err
	}
	known := map[string]peer.ID{}
	for _, p := range start {
		known[string(p)] = p
	}
	region := c.regions.Region(kw)
	inside, near, questions, err := c.walkRegion(ctx, region, known)
	if err != nil {
		return nil, questions, err
	}
	// Nodes this party found dead are out: others' views may still list
	// them, but the entries' writers have moved on to the next nearest.
	dead := func(p index.Peer) bool { return c.d.IsMarkedDead(peer.ID(p.ID)) }
	inside, near = slices.DeleteFunc(inside, dead), slices.DeleteFunc(near, dead)
	if len(inside) == 0 && len(near) > 0 {
		twin := keyspace.NewRegion(near[0].Pos, region.Bits)
		more, _, q, err := c.walkRegion(ctx, twin, known)
		questions += q
		if err != nil {
			return nil, questions, err
		}
		inside = more
	}
	seen := map[string]bool{}
	var out []peer.ID
	for _, list := range [][]index.Peer{inside, near} {
		for _, p := range list {
			if !seen[p.ID] {
				seen[p.ID] = true
				out = append(out, peer.ID(p.ID))
			}
		}
	}
	return out, questions, nil
}

// walkRegion runs the index.Walk planner over region, asking the known
// node nearest to each sub-region for its near peers; it returns the nodes
// inside and the nearest outside ones.
func (c *Client) walkRegion(ctx context.Context, region keyspace.Region, known map[string]peer.ID) (inside, near []index.Peer, questions int, err error) {
	w := index.NewWalk(region, nearLimit, index.WalkOutside)
	for sub, ok := w.Next(); ok; sub, ok = w.Next() {
		target := sub.First()
		var answered []index.Peer
		for range 3 { // a node that fails is skipped for the next nearest
			var ask peer.ID
			for _, p := range known {
				if c.d.IsMarkedDead(p) {
					continue
				}
				if ask == "" || keyspace.CloserTo(target, keyspace.PeerPos([]byte(p)), keyspace.PeerPos([]byte(ask))) {
					ask = p
				}
			}
			if ask == "" {
				return nil, nil, questions, fmt.Errorf("walk of %s: no live node known", region)
			}
			ans, err := c.regions.near(ctx, ask, target, nearLimit)
			questions++
			if err != nil {
				c.d.MarkDead(ask)
				continue
			}
			answered = make([]index.Peer, len(ans))
			for i, p := range ans {
				known[string(p)] = p
				answered[i] = index.Peer{ID: string(p), Pos: keyspace.PeerPos([]byte(p))}
			}
			break
		}
		w.Answer(sub, answered)
	}
	for _, p := range w.Nodes() {
		if region.Contains(p.Pos) {
			inside = append(inside, p)
		} else {
			near = append(near, p)
		}
	}
	return inside, near, questions, nil
}
