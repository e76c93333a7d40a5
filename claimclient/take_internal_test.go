package claimclient

import (
	"context"
	"testing"
	"time"
)

// TestTakeWaitsForRelease: a job held is refused; a job being released is
// taken once the release is done, or refused when the caller gives up
// first; a job no longer held is taken at once.
func TestTakeWaitsForRelease(t *testing.T) {
	c := &Claimer{}
	job := []byte("job")
	ctx := context.Background()
	if !c.take(ctx, job) {
		t.Fatal("a free job was refused")
	}
	if c.take(ctx, job) {
		t.Fatal("a held job was taken twice")
	}

	c.releaseStarted(job)
	short, cancel := context.WithCancel(ctx)
	cancel()
	if c.take(short, job) {
		t.Fatal("a job being released was taken by a caller that gave up")
	}
	got := make(chan bool, 1)
	go func() { got <- c.take(ctx, job) }()
	select {
	case <-got:
		t.Fatal("a job being released was taken before its release was done")
	case <-time.After(50 * time.Millisecond): // the taker is waiting, as it must
	}
	c.drop(job) // the release is done
	if !<-got {
		t.Fatal("a released job was refused")
	}
	c.drop(job)
	if !c.take(ctx, job) {
		t.Fatal("a dropped job was refused")
	}
}
