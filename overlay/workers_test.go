package overlay

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestWorkersRunAllAtOnce: requests that wait on each other all run at
// once (a new worker when none is idle), and idle workers take later ones.
func TestWorkersRunAllAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newWorkers(ctx)
	for round := 0; round < 3; round++ {
		const n = 50
		var started, done sync.WaitGroup
		started.Add(n)
		done.Add(n)
		for range n {
			w.run(func() {
				started.Done()
				started.Wait() // every request must be running
				done.Done()
			})
		}
		finished := make(chan struct{})
		go func() { done.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: requests did not all run at once", round)
		}
	}
}

// TestReqCtx: a request's context carries its deadline, ends at it or when
// the endpoint closes, and ends when released whether or not a handler
// looked at it before.
func TestReqCtx(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	dl := time.Now().Add(20 * time.Millisecond)
	c := newReqCtx(parent, dl)
	if got, ok := c.Deadline(); !ok || !got.Equal(dl) {
		t.Fatalf("deadline %v %v", got, ok)
	}
	if c.Err() != nil {
		t.Fatal("ended early")
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not ended at its deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v", c.Err())
	}
	c.release()

	c = newReqCtx(parent, time.Now().Add(time.Hour))
	sub, subCancel := context.WithTimeout(c, time.Hour)
	defer subCancel()
	cancel()
	select {
	case <-sub.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a context made from it did not end with the endpoint")
	}
	c.release()

	for _, look := range []bool{false, true} {
		c = newReqCtx(context.Background(), time.Now().Add(time.Hour))
		if look {
			_ = c.Done()
		}
		c.release()
		select {
		case <-c.Done():
		default:
			t.Fatalf("looked at first %v: not ended when released", look)
		}
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("looked at first %v: err %v", look, c.Err())
		}
	}
}
