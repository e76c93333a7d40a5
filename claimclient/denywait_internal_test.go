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
