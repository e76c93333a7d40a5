package claimnet

import "testing"

// TestOwnReplies: a reply is recognised once, byte for byte; a copy with
// one byte changed is not; a generation ends when ttl old or holding
// max/2, and the one before it is dropped.
func TestOwnReplies(t *testing.T) {
	o := newOwnReplies(4, 1000)
	reply := []byte("a signed reply")
	o.add(reply, 0)
	altered := append([]byte(nil), reply...)
	altered[3] ^= 1
	if o.take(altered) {
		t.Fatal("an altered reply was taken for this node's own")
	}
	if o.take(reply[:len(reply)-1]) {
		t.Fatal("a cut reply was taken for this node's own")
	}
	if !o.take(reply) {
		t.Fatal("this node's reply was not recognised")
	}
	if o.take(reply) {
		t.Fatal("a reply was recognised twice")
	}

	o.add([]byte("old"), 0)
	o.add([]byte("new1"), 5000) // "old"'s generation is past ttl: a new one
	o.add([]byte("new2"), 5000)
	o.add([]byte("new3"), 5000) // the new one holds max/2: "old"'s generation goes
	if o.take([]byte("old")) {
		t.Fatal("an expired reply was kept in a full cache")
	}
	if !o.take([]byte("new1")) || !o.take([]byte("new3")) {
		t.Fatal("recent replies were dropped")
	}

	// The clock goes back an hour: generations follow the new clock, so a
	// reply still ages out 2 × ttl after it was added.
	o = newOwnReplies(1000, 1000)
	o.add([]byte("before"), 3_600_000)
	o.add([]byte("x"), 0) // dated behind the generation: a new one
	o.add([]byte("y"), 1000)
	o.add([]byte("z"), 2000)
	if o.take([]byte("x")) {
		t.Fatal("after the clock went back, a reply outlived two generations of ttl")
	}
	if !o.take([]byte("y")) || !o.take([]byte("z")) {
		t.Fatal("replies of the last two generations were dropped")
	}
}
