package overlay

import (
	"context"
	"time"
)

// workerIdle is how long a request worker waits without work, at least
// and at most twice, before it ends.
const workerIdle = 5 * time.Second

// workers run the multiplexed requests of an endpoint. A goroutine made
// per request starts on a small stack and grows it (copying it each time)
// through the CBOR decoding, the store and the signature checks of every
// handler; a worker keeps its grown stack from one request to the next.
// Workers are made on demand, so as many requests run at once as before,
// and end once idle for workerIdle (at most twice that) or when the
// endpoint closes.
type workers struct {
	ctx  context.Context
	work chan func() // unbuffered: a send succeeds only when a worker is idle
}

func newWorkers(ctx context.Context) *workers {
	return &workers{ctx: ctx, work: make(chan func())}
}

// run runs f on an idle worker, or on a new one when none is idle.
func (w *workers) run(f func()) {
	select {
	case w.work <- f:
	default:
		go w.loop(f)
	}
}

// loop runs f, then the requests handed to it, until it has been idle
// for a whole workerIdle or the endpoint closed.
func (w *workers) loop(f func()) {
	f()
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	worked := false // since the timer was last set
	for {
		select {
		case f = <-w.work:
			f()
			worked = true
		case <-t.C:
			if !worked {
				return
			}
			worked = false
			t.Reset(workerIdle)
		case <-w.ctx.Done():
			return
		}
	}
}
