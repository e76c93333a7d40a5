package overlay

import (
	"context"
	"sync"
	"time"
)

// reqCtx is the context of one multiplexed request: the endpoint's
// context, ending at the request's deadline. Most handlers never look at
// their context, so the context.WithDeadline behind it (a timer, and a
// child registered with the endpoint's context under its lock) is made
// only when Done, Err or Value is first called; it is then exactly that
// context, the deadline fixed when the request arrived.
type reqCtx struct {
	parent   context.Context
	deadline time.Time

	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
}

var _ context.Context = (*reqCtx)(nil)

func newReqCtx(parent context.Context, deadline time.Time) *reqCtx {
	return &reqCtx{parent: parent, deadline: deadline}
}

// real returns the context.WithDeadline, made on the first call.
func (c *reqCtx) real() context.Context {
	c.once.Do(func() { c.ctx, c.cancel = context.WithDeadline(c.parent, c.deadline) })
	return c.ctx
}

// canceled is the context of a request answered before its handler
// looked at its context: done, with the endpoint context's (lack of)
// values.
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// release ends the context (and its timer) when the request is answered.
func (c *reqCtx) release() {
	c.once.Do(func() { c.ctx = canceled })
	if c.cancel != nil {
		c.cancel()
	}
}

// Deadline is the request's deadline.
func (c *reqCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done is closed at the deadline, when the endpoint closes, or when the
// request has been answered.
func (c *reqCtx) Done() <-chan struct{} { return c.real().Done() }

// Err is nil until Done is closed.
func (c *reqCtx) Err() error { return c.real().Err() }

// Value is the endpoint's context's value for key.
func (c *reqCtx) Value(key any) any { return c.real().Value(key) }
