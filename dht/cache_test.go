package dht

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestLookupCacheExpiry: an entry is served strictly before its expiry
// and dropped at it.
func TestLookupCacheExpiry(t *testing.T) {
	c := newLookupCache(16)
	t0 := time.Unix(1_000_000, 0)
	ps := []peer.ID{"a", "b"}
	c.put("k", ps, t0, t0.Add(90*time.Second))
	if got, ok := c.get("k", t0.Add(89*time.Second)); !ok || len(got) != 2 {
		t.Fatalf("before expiry: %v %v", got, ok)
	}
	if _, ok := c.get("k", t0.Add(90*time.Second)); ok {
		t.Fatal("entry served at its expiry")
	}
	if len(c.m) != 0 {
		t.Fatalf("expired entry kept: %d entries", len(c.m))
	}
}

// TestLookupCacheDelAndPurge: del forgets one key; purgePeer forgets
// every answer naming the peer, and only those.
func TestLookupCacheDelAndPurge(t *testing.T) {
	c := newLookupCache(16)
	exp := time.Unix(2_000_000, 0)
	now := exp.Add(-time.Second)
	c.put("k1", []peer.ID{"a", "b"}, now, exp)
	c.put("k2", []peer.ID{"b", "c"}, now, exp)
	c.put("k3", []peer.ID{"c", "d"}, now, exp)
	c.del("k3")
	if _, ok := c.get("k3", now); ok {
		t.Fatal("deleted key still served")
	}
	c.purgePeer("b")
	for _, k := range []string{"k1", "k2"} {
		if _, ok := c.get(k, now); ok {
			t.Fatalf("%s names the purged peer but is still served", k)
		}
	}
	c.put("k4", []peer.ID{"c", "d"}, now, exp)
	c.purgePeer("x")
	if _, ok := c.get("k4", now); !ok {
		t.Fatal("purging an absent peer dropped an unrelated entry")
	}
}

// TestLookupCacheBound: however many keys are put, the cache never holds
// more than its maximum; when full, expired entries are evicted before
// live ones, and the new entry is always kept.
func TestLookupCacheBound(t *testing.T) {
	const max = 64
	t0 := time.Unix(3_000_000, 0)
	c := newLookupCache(max)
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * time.Millisecond) // nothing expires
		key := fmt.Sprint("k", i)
		c.put(key, []peer.ID{"a"}, now, now.Add(90*time.Second))
		if len(c.m) > max {
			t.Fatalf("after %d puts the cache holds %d > %d entries", i+1, len(c.m), max)
		}
		if _, ok := c.get(key, now); !ok {
			t.Fatalf("entry %s evicted by its own put", key)
		}
		// Live entries are evicted only down to 7/8 of the bound.
		if i >= max && len(c.m) < max*7/8 {
			t.Fatalf("after %d puts eviction left %d live entries, want at least %d", i+1, len(c.m), max*7/8)
		}
	}

	// Half the entries have expired when a new one comes: they go, the
	// live half stays.
	c = newLookupCache(max)
	for i := range max {
		exp := t0.Add(time.Hour)
		if i%2 == 0 {
			exp = t0.Add(time.Second)
		}
		c.put(fmt.Sprint("k", i), []peer.ID{"a"}, t0, exp)
	}
	now := t0.Add(time.Minute)
	c.put("new", []peer.ID{"a"}, now, now.Add(90*time.Second))
	for i := 1; i < max; i += 2 {
		if _, ok := c.get(fmt.Sprint("k", i), now); !ok {
			t.Fatalf("live entry k%d evicted while expired ones could go", i)
		}
	}
	if len(c.m) != max/2+1 {
		t.Fatalf("cache holds %d entries, want the %d live ones and the new one", len(c.m), max/2)
	}

	// Re-putting a key of a full cache replaces it without evicting.
	c.put("k1", []peer.ID{"b"}, now, now.Add(time.Hour))
	if got, _ := c.get("k1", now); len(got) != 1 || got[0] != "b" {
		t.Fatalf("re-put k1 = %v", got)
	}
}
