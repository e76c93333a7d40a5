package claimnet

import (
	"crypto/sha256"
	"sync"
)

// ownReplies remembers the SHA-256 digests of the signed replies this
// node sent lately. A confirm carries every reply of the claim back to
// every node, this node's own among them; when its bytes hash to a reply
// this node signed and sent, they are exactly those bytes, and the
// signature in them is this node's own: it need not be verified again.
// Any other bytes (altered, re-encoded, another node's, or a reply
// forgotten here) are verified as before. Bounded: entries older than ttl
// go when the map is full, and all of them if it is still full.
type ownReplies struct {
	mu  sync.Mutex
	max int
	ttl int64 // ms
	m   map[[sha256.Size]byte]int64
}

func newOwnReplies(max int, ttlMS int64) *ownReplies {
	return &ownReplies{max: max, ttl: ttlMS, m: map[[sha256.Size]byte]int64{}}
}

// add remembers reply b, signed and sent by this node at now (Unix ms).
func (o *ownReplies) add(b []byte, now int64) {
	d := sha256.Sum256(b)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.m) >= o.max {
		for k, at := range o.m {
			if at < now-o.ttl {
				delete(o.m, k)
			}
		}
		if len(o.m) >= o.max {
			clear(o.m)
		}
	}
	o.m[d] = now
}

// take reports whether b is a reply this node signed and sent, and
// forgets it.
func (o *ownReplies) take(b []byte) bool {
	d := sha256.Sum256(b)
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.m[d]; !ok {
		return false
	}
	delete(o.m, d)
	return true
}
