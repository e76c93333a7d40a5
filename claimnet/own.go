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
// forgotten here) are verified as before. Bounded in two generations: a
// new one starts when the current one is ttl old or holds max/2, and the
// one before it is dropped, so at most max digests are held and each for
// at least min(ttl, max/2 later replies). A reply never confirmed back
// (the replica a client did not confirm to) is forgotten within 2 × ttl,
// so the memory follows the reply rate, not the run's length.
type ownReplies struct {
	mu       sync.Mutex
	half     int
	ttl      int64                          // ms
	cur, old map[[sha256.Size]byte]struct{} // the current generation, since curFrom, and the one before
	curFrom  int64                          // Unix ms
}

func newOwnReplies(max int, ttlMS int64) *ownReplies {
	return &ownReplies{half: max / 2, ttl: ttlMS, cur: map[[sha256.Size]byte]struct{}{}}
}

// add remembers reply b, signed and sent by this node at now (Unix ms).
func (o *ownReplies) add(b []byte, now int64) {
	d := sha256.Sum256(b)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.cur) >= o.half || now-o.curFrom >= o.ttl || now < o.curFrom {
		o.old, o.cur, o.curFrom = o.cur, make(map[[sha256.Size]byte]struct{}, len(o.cur)), now
	}
	o.cur[d] = struct{}{}
}

// take reports whether b is a reply this node signed and sent, and
// forgets it.
func (o *ownReplies) take(b []byte) bool {
	d := sha256.Sum256(b)
	o.mu.Lock()
	defer o.mu.Unlock()
	_, inCur := o.cur[d]
	_, inOld := o.old[d]
	delete(o.cur, d)
	delete(o.old, d)
	return inCur || inOld
}
