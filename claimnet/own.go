package claimnet

import (
	"crypto/sha256"
	"sync"

	"github.com/up-pool/up/recent"
)

// ownReplies remembers the SHA-256 digests of the signed replies this
// node sent lately. A confirm carries every reply of the claim back to
// every node, this node's own among them; when its bytes hash to a reply
// this node signed and sent, they are exactly those bytes, and the
// signature in them is this node's own: it need not be verified again.
// Any other bytes (altered, re-encoded, another node's, or a reply
// forgotten here) are verified as before. Bounded in two generations: a
// new one starts when the current one is ttl old or holds max/2, and the
// one before it is dropped, so at most max digests are held and each for
// at least min(ttl, max/2 later replies). A reply never confirmed back
// (the replica a client did not confirm to) is forgotten within 2 × ttl,
// so the memory follows the reply rate, not the run's length.
type ownReplies struct {
	mu      sync.Mutex
	ttl     int64 // ms
	seen    recent.Set[[sha256.Size]byte]
	curFrom int64 // Unix ms: when seen's current generation started
}

func newOwnReplies(max int, ttlMS int64) *ownReplies {
	return &ownReplies{ttl: ttlMS, seen: recent.NewSet[[sha256.Size]byte](max)}
}

// add remembers reply b, signed and sent by this node at now (Unix ms).
// A generation older than ttl (or dated ahead of now: the clock went
// back) ends first.
func (o *ownReplies) add(b []byte, now int64) {
	d := sha256.Sum256(b)
	o.mu.Lock()
	defer o.mu.Unlock()
	if now-o.curFrom >= o.ttl || now < o.curFrom {
		o.seen.Rotate()
		o.curFrom = now
	}
	o.seen.Add(d)
}

// take reports whether b is a reply this node signed and sent, and
// forgets it.
func (o *ownReplies) take(b []byte) bool {
	d := sha256.Sum256(b)
	o.mu.Lock()
	defer o.mu.Unlock()
	ok := o.seen.Has(d)
	o.seen.Delete(d)
	return ok
}
