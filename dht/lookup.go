package dht

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	"github.com/up-pool/up/dht/keyspace"
)

// ClosestPeers returns the r closest nodes to key (r = Config.Replication),
// nearest first, including this party when it is a node. An answer is
// reused from the cache for LookupCacheTTL, so a second lookup of the same
// key costs no RPC.
func (d *DHT) ClosestPeers(ctx context.Context, key []byte) ([]peer.ID, error) {
	return d.ClosestN(ctx, key, d.cfg.Replication)
}

// ClosestN is ClosestPeers for n peers (n <= BucketSize).
func (d *DHT) ClosestN(ctx context.Context, key []byte, n int) ([]peer.ID, error) {
	if len(key) == 0 {
		return nil, fmt.Errorf("lookup of an empty key")
	}
	now := d.env.Now()
	if !d.cfg.DisableLookupCache {
		if ps, ok := d.cache.get(string(key), now); ok && len(ps) >= min(n, d.cfg.BucketSize) {
			d.cachedHits.Add(1)
			d.mLookups.WithLabelValues("cache").Inc()
			return firstN(ps, n), nil
		}
	}
	ps, err := d.lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	if !d.cfg.DisableLookupCache {
		d.cache.put(string(key), ps, now, now.Add(d.cfg.LookupCacheTTL))
	}
	return firstN(ps, n), nil
}

// Invalidate forgets the cached answer for key (e.g. after a holder failed).
func (d *DHT) Invalidate(key []byte) { d.cache.del(string(key)) }

func firstN(ps []peer.ID, n int) []peer.ID {
	if len(ps) > n {
		ps = ps[:n]
	}
	return append([]peer.ID(nil), ps...)
}

// lookup runs one kad-dht GetClosestPeers for key and counts its RPCs.
func (d *DHT) lookup(ctx context.Context, key []byte) ([]peer.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.LookupTimeout)
	evCtx, events := routing.RegisterForQueryEvents(ctx)
	var rpcs int64
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for ev := range events {
			if ev.Type == routing.SendingQuery {
				rpcs++
			}
		}
	}()
	ps, err := d.kad.GetClosestPeers(evCtx, string(key))
	cancel()
	<-counted
	d.lookups.Add(1)
	d.lookupRPCs.Add(rpcs)
	d.observeLookup(ctx, rpcs)
	d.mLookups.WithLabelValues("network").Inc()
	d.mLookupRPCs.Add(float64(rpcs))
	if err != nil && len(ps) == 0 {
		return nil, fmt.Errorf("lookup %x: %w", key, err)
	}
	if d.IsServer() {
		ps = append(ps, d.ep.ID())
	}
	SortPeers(keyspace.KeyPos(key), ps)
	return ps, nil
}

// lookupCache holds closest-peers answers until they expire. Bounded: when
// full, expired entries go first, then arbitrary ones.
type lookupCache struct {
	max int
	mu  sync.Mutex
	m   map[string]cacheEntry
}

type cacheEntry struct {
	peers   []peer.ID
	expires time.Time
}

func newLookupCache(max int) *lookupCache {
	return &lookupCache{max: max, m: make(map[string]cacheEntry)}
}

func (c *lookupCache) get(key string, now time.Time) ([]peer.ID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil, false
	}
	if !now.Before(e.expires) {
		delete(c.m, key)
		return nil, false
	}
	return e.peers, true
}

// put stores an answer until expires. When the cache is full it first
// drops the entries expired at now, then, if that freed too little,
// arbitrary ones down to 7/8 of the bound.
func (c *lookupCache) put(key string, ps []peer.ID, now, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.max*7/8 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[key] = cacheEntry{peers: ps, expires: expires}
}

func (c *lookupCache) del(key string) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}

// purgePeer drops every answer that names p.
func (c *lookupCache) purgePeer(p peer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		for _, q := range e.peers {
			if q == p {
				delete(c.m, k)
				break
			}
		}
	}
}
