package client

import (
	"context"
	"slices"
	"sync"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/quota"
)

// maxRevealing bounds the jobs of a client waiting to reveal their
// results in the background: the most jobs in progress a quota can allow
// (quota.DefaultMax). Past it a job waits in its slot, as every job did
// before slots were freed (0: every job does; the tests' control). A low
// bound stalls small networks: with four clients that may each hold ten
// first copies, forty units can all wait for siblings nobody can claim
// (the demo stalled at 50 of 128 results with 4 per slot).
var maxRevealing = quota.DefaultMax

// slotKey is the context key of a worker's slot (runFreeing).
type slotKey struct{}

// slot is a worker's slot lent to one cycle: freed is closed when the
// cycle's job no longer needs it.
type slot struct {
	once  sync.Once
	freed chan struct{}
}

// runFreeing runs one cycle (RunOne) and returns when it ends, or earlier,
// with ran true and no error, once its job waits only to reveal its result
// (beginReveal): the worker goes on to its next job while the cycle finishes
// in the background, counted in c.bg (Run waits for it) and logged there.
func (c *Client) runFreeing(ctx context.Context, project string) (bool, error) {
	s := &slot{freed: make(chan struct{})}
	type outcome struct {
		ran bool
		err error
	}
	done := make(chan outcome, 1)
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		ran, err := c.RunOne(context.WithValue(ctx, slotKey{}, s), project)
		done <- outcome{ran, err}
		select {
		case <-s.freed:
			if err != nil && ctx.Err() == nil {
				c.log.Warn("job failed after its slot was freed", "project", project, "err", err)
			}
		default:
		}
	}()
	select {
	case o := <-done:
		return o.ran, o.err
	case <-s.freed:
		return true, nil
	}
}

// Revealing is the number of jobs waiting in the background to reveal
// their results, their slots freed.
func (c *Client) Revealing() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revealingLocked()
}

func (c *Client) revealingLocked() int {
	n := 0
	for _, w := range c.waiting {
		if w.freed {
			n++
		}
	}
	return n
}

// breakStalls turns breakRevealStall on (off: the tests' control).
var breakStalls = true

// waiter is a job waiting to reveal its result (beginReveal).
type waiter struct {
	cid    string
	cancel context.CancelCauseFunc
	freed  bool // its cycle's slot was freed
}

// beginReveal registers the job named cid as waiting to reveal its
// result and returns the context it waits under, which breakRevealStall
// may end early; the returned func ends the wait. It frees the slot of
// ctx's cycle (runFreeing) unless maxRevealing jobs wait with theirs
// freed already or the cycle has no slot to free (RunOne called
// directly).
func (c *Client) beginReveal(ctx context.Context, cid string) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	s, _ := ctx.Value(slotKey{}).(*slot)
	c.mu.Lock()
	freed := s != nil && c.revealingLocked() < maxRevealing
	c.waiting = append(c.waiting, waiter{cid: cid, cancel: cancel, freed: freed})
	c.mu.Unlock()
	if freed {
		s.once.Do(func() { close(s.freed) })
	}
	return wctx, func() {
		c.mu.Lock()
		c.waiting = slices.DeleteFunc(c.waiting, func(w waiter) bool { return w.cid == cid })
		c.mu.Unlock()
		cancel(nil)
	}
}

// breakRevealStall reveals at once the job that has waited longest to
// reveal when every job the client holds waits to reveal: at its quota
// (claimclient.ErrOverQuota) it could otherwise claim nothing until a
// wait ends (RevealWait, 10 min by default), and in a network of few
// clients every client can be full of first copies whose siblings nobody
// has room for. The early reveal is still bound by its commitment; what
// it gives up is only that the unit's other copies committed first, and
// its result is sealed to the project, so they learn nothing from it.
func (c *Client) breakRevealStall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 || !breakStalls {
		return
	}
	for cid := range c.ctl.held {
		if j := c.jobs[cid]; j == nil || j.State != "revealing" {
			return // a job still runs: its end frees the quota
		}
	}
	w := c.waiting[0]
	c.waiting = c.waiting[1:]
	c.log.Info("revealing early: every job held waits to reveal, at the quota", "job", w.cid)
	w.cancel(claimclient.ErrRevealEarly)
}
