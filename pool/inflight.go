package pool

import "sync"

// inflight counts the pool's background hand-ons (replications, result
// fetches, syncs) so Quiesce and Close can wait for them. Unlike a
// sync.WaitGroup, a task may start from zero while another goroutine
// waits: hand-ons start from network handlers at any time, and a
// WaitGroup reused that way panics ("WaitGroup is reused before previous
// Wait has returned"). The zero value is ready to use.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle *sync.Cond // signalled when n drops to 0; made on first use
}

// Go runs fn in a new goroutine, counted until it returns.
func (f *inflight) Go(fn func()) {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
	go func() {
		defer f.done()
		fn()
	}()
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 && f.idle != nil {
		f.idle.Broadcast()
	}
}

// Wait returns once no task is running. Tasks started meanwhile are
// waited for too.
func (f *inflight) Wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.idle == nil {
		f.idle = sync.NewCond(&f.mu)
	}
	for f.n > 0 {
		f.idle.Wait()
	}
}
