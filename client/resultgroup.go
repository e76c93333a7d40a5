package client

import (
	"context"
	"sync"
	"time"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/result"
)

// Results of a place delivered together (Config.ResultLinger): the jobs
// a cycle won with one many-claim (tryPlace) form a group. A job's
// result, once sealed, waits for the group's other results — its slot
// freed meanwhile — and the last one ready (or the last job to leave the
// group unfinished) sends them all: one outer signature over their batch
// (result.SignOuterBatch) and one request per node
// (claimclient.SubmitResults). A result that has waited ResultLinger is
// sent with whatever else is ready then, so a slow or stuck job of the
// group delays the others by that much at most.

// resultGroup is the results of one many-claim's jobs.
type resultGroup struct {
	send func(context.Context, []*groupResult) // Client.sendGroup (tests: a fake)

	mu      sync.Mutex
	pending map[string]bool // jobs whose result is not ready and that are still in the group
	ready   []*groupResult  // results sealed, waiting to be sent
}

// groupResult is one result of a group and, once sent, its outcome.
type groupResult struct {
	cl     *claimclient.Claim
	env    *result.Envelope
	done   chan struct{} // closed once stored and err are set
	stored int
	err    error
}

// startGroup makes the jobs of claims (two or more, won together) a
// group whose results leave together.
func (c *Client) startGroup(claims []*claimclient.Claim) {
	c.startGroupWith(claims, c.sendGroup)
}

// startGroupWith is startGroup with the group's results sent by send.
func (c *Client) startGroupWith(claims []*claimclient.Claim, send func(context.Context, []*groupResult)) {
	if len(claims) < 2 || c.cfg.ResultLinger < 0 {
		return
	}
	g := &resultGroup{send: send, pending: make(map[string]bool, len(claims))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups == nil {
		c.groups = map[string]*resultGroup{}
	}
	for _, cl := range claims {
		g.pending[string(cl.Job)] = true
		c.groups[string(cl.Job)] = g
	}
}

// takeGroup returns the group of the job key (nil: none) and takes the
// job out of the client's index of groups.
func (c *Client) takeGroup(key []byte) *resultGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[string(key)]
	delete(c.groups, string(key))
	return g
}

// deliver signs and delivers a job's sealed result: alone, or with its
// group's (see above). It returns how many replicas stored it, as
// SubmitResult does.
func (c *Client) deliver(ctx context.Context, cl *claimclient.Claim, env *result.Envelope) (int, error) {
	g := c.takeGroup(cl.Job)
	if g == nil {
		result.SignOuter(env, c.cfg.Agent.Identity().Key)
		return c.claimer.SubmitResult(ctx, cl, env.Encode())
	}
	r := &groupResult{cl: cl, env: env, done: make(chan struct{})}
	g.mu.Lock()
	delete(g.pending, string(cl.Job))
	g.ready = append(g.ready, r)
	if len(g.pending) == 0 {
		batch := g.takeLocked()
		g.mu.Unlock()
		g.send(ctx, batch)
		return r.stored, r.err
	}
	g.mu.Unlock()
	freeSlot(ctx) // the next job, perhaps of this group, runs meanwhile
	t := time.NewTimer(c.cfg.ResultLinger)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		g.mu.Lock()
		batch := g.takeLocked() // empty when another sends it already
		g.mu.Unlock()
		if len(batch) > 0 {
			g.send(ctx, batch)
		}
	case <-ctx.Done():
		// Stopping: what is ready leaves now, within stopSendTimeout,
		// rather than be given back after it was computed.
		g.mu.Lock()
		batch := g.takeLocked()
		g.mu.Unlock()
		if len(batch) > 0 {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopSendTimeout)
			g.send(sctx, batch)
			cancel()
		}
	}
	<-r.done
	return r.stored, r.err
}

// leaveGroup takes a job that will not deliver a result (it failed, or
// was released unrun) out of its group; when it was the last the others
// waited for, their results leave now.
func (c *Client) leaveGroup(ctx context.Context, key []byte) {
	g := c.takeGroup(key)
	if g == nil {
		return
	}
	g.mu.Lock()
	delete(g.pending, string(key))
	var batch []*groupResult
	if len(g.pending) == 0 {
		batch = g.takeLocked()
	}
	g.mu.Unlock()
	if len(batch) > 0 {
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			g.send(context.WithoutCancel(ctx), batch)
		}()
	}
}

// takeLocked takes the group's ready results to send. g.mu is held.
func (g *resultGroup) takeLocked() []*groupResult {
	batch := g.ready
	g.ready = nil
	return batch
}

// stopSendTimeout bounds the delivery of a group's ready results when
// the client stops while they wait.
const stopSendTimeout = 5 * time.Second

// sendGroup signs batch's envelopes under one signature, delivers them
// together and hands each result its outcome.
func (c *Client) sendGroup(ctx context.Context, batch []*groupResult) {
	if len(batch) == 0 {
		return
	}
	envs := make([]*result.Envelope, len(batch))
	for i, r := range batch {
		envs[i] = r.env
	}
	items := make([]claimclient.ResultItem, len(batch))
	err := result.SignOuterBatch(envs, c.cfg.Agent.Identity().Key)
	for i, r := range batch {
		items[i] = claimclient.ResultItem{Claim: r.cl, Envelope: r.env.Encode()}
	}
	var counts []int
	var errs []error
	if err == nil {
		counts, errs = c.claimer.SubmitResults(ctx, items)
	}
	for i, r := range batch {
		if err != nil {
			r.err = err
		} else {
			r.stored, r.err = counts[i], errs[i]
		}
		close(r.done)
	}
}

// freeSlot frees the slot of ctx's cycle (runFreeing), if it has one.
func freeSlot(ctx context.Context) {
	if s, _ := ctx.Value(slotKey{}).(*slot); s != nil {
		s.once.Do(func() { close(s.freed) })
	}
}
