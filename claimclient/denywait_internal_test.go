package claimclient

import (
	"testing"
	"time"
)

func TestDenyWait(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		took time.Duration
		busy bool
		left int
		want time.Duration
	}{
		{5 * ms, false, 3, 20 * ms},              // at least 20 ms
		{100 * ms, false, 3, 100 * ms},           // one round trip
		{3 * time.Second, false, 3, time.Second}, // at most 1 s
		{100 * ms, true, 3, 400 * ms},            // each left ask and the confirm
		{100 * ms, true, 0, 100 * ms},            // the confirm only
		{100 * ms, true, -2, 100 * ms},
		{5 * ms, true, 4, 100 * ms},
		{time.Second, true, 4, 2 * time.Second}, // at most 2 s
	} {
		if got := denyWait(tt.took, tt.busy, tt.left); got != tt.want {
			t.Errorf("denyWait(%v, busy %v, %d left) = %v, want %v", tt.took, tt.busy, tt.left, got, tt.want)
		}
	}
}

// TestLaterStart: a grant's named start moves the claim's start later,
// unless it lies beyond any honest client's clock (a lying replica could
// otherwise push every confirm off the honest nodes' clocks).
func TestLaterStart(t *testing.T) {
	const now, off = int64(1_000_000_000), int64(10 * 60 * 1000)
	for _, tt := range []struct {
		after, named, want int64
	}{
		{0, 0, 0},
		{0, now - 5, now - 5},
		{now - 5, now - 9, now - 5},
		{0, now + off, now + off},         // a client 10 min fast: honest, followed
		{now - 5, now + off + 1, now - 5}, // beyond: a liar, ignored
		{now + 7, now + 1<<40, now + 7},   // a far future start
	} {
		if got := laterStart(tt.after, tt.named, now); got != tt.want {
			t.Errorf("laterStart(%d, %d) = %d, want %d", tt.after-now, tt.named-now, got-now, tt.want-now)
		}
	}
}
