package overlay

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestHeard: a peer heard at t counts since any time up to t, not after;
// forgotten (its connections closed), it counts for nothing.
func TestHeard(t *testing.T) {
	var h heard
	p, q := peer.ID("p"), peer.ID("q")
	t0 := time.Unix(1_000, 0)
	h.mark(p, t0)
	for _, c := range []struct {
		who   peer.ID
		since time.Time
		want  bool
	}{
		{p, t0.Add(-time.Second), true},
		{p, t0, true},
		{p, t0.Add(time.Millisecond), false},
		{q, t0.Add(-time.Hour), false},
	} {
		if got := h.since(c.who, c.since); got != c.want {
			t.Errorf("since(%s, %v) = %v, want %v", c.who, c.since.Sub(t0), got, c.want)
		}
	}
	h.forget(p)
	if h.since(p, t0.Add(-time.Hour)) {
		t.Fatal("a forgotten peer still counts as heard")
	}
}
