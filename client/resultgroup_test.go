package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/testnet/testkit"
)

// groupRig is a client whose result groups send through a recorder.
type groupRig struct {
	c      *Client
	claims []*claimclient.Claim
	mu     sync.Mutex
	sent   [][]string // the jobs of each send, in order
}

func newGroupRig(n int, linger time.Duration) *groupRig {
	g := &groupRig{c: &Client{}}
	g.c.cfg.ResultLinger = linger
	for i := range n {
		g.claims = append(g.claims, &claimclient.Claim{Job: []byte(fmt.Sprintf("job%d", i))})
	}
	g.c.startGroupWith(g.claims, func(_ context.Context, batch []*groupResult) {
		var jobs []string
		for _, r := range batch {
			jobs = append(jobs, string(r.cl.Job))
			r.stored = 3
			close(r.done)
		}
		slices.Sort(jobs)
		g.mu.Lock()
		g.sent = append(g.sent, jobs)
		g.mu.Unlock()
	})
	return g
}

// deliverAsync delivers job i's result in the background.
func (g *groupRig) deliverAsync(i int) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := g.c.deliver(context.Background(), g.claims[i], &result.Envelope{Job: g.claims[i].Job})
		done <- err
	}()
	return done
}

func (g *groupRig) sends() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.sent)
}

// waitReady waits until n results of the group wait to be sent.
func (g *groupRig) waitReady(t *testing.T, n int) {
	t.Helper()
	g.c.mu.Lock()
	gr := g.c.groups[string(g.claims[len(g.claims)-1].Job)]
	g.c.mu.Unlock()
	testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("%d results ready", n), func() bool {
		gr.mu.Lock()
		defer gr.mu.Unlock()
		return len(gr.ready) >= n
	})
}

// TestGroupResultsLeaveTogether: the results of a group's jobs wait for
// each other and leave in one send when the last is ready.
func TestGroupResultsLeaveTogether(t *testing.T) {
	g := newGroupRig(3, time.Hour)
	a, b := g.deliverAsync(0), g.deliverAsync(1)
	g.waitReady(t, 2)
	if s := g.sends(); len(s) != 0 {
		t.Fatalf("sent %v before the group's last result", s)
	}
	if _, err := g.c.deliver(context.Background(), g.claims[2], &result.Envelope{Job: g.claims[2].Job}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan error{a, b} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if s := g.sends(); len(s) != 1 || len(s[0]) != 3 {
		t.Fatalf("sends %v, want the three results in one", s)
	}
}

// TestGroupResultWaitsAtMostLinger: a group's job that never ends holds
// the others' results back for ResultLinger only: they leave together
// then, and the stuck job's own result, should it come, leaves alone.
func TestGroupResultWaitsAtMostLinger(t *testing.T) {
	g := newGroupRig(3, 30*time.Millisecond)
	a, b := g.deliverAsync(0), g.deliverAsync(1)
	for _, ch := range []chan error{a, b} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("results held back past ResultLinger by a job that does not end")
		}
	}
	if s := g.sends(); len(s) == 0 || len(s) > 2 {
		t.Fatalf("sends %v, want the two results in one or two sends", s)
	}
	before := len(g.sends())
	if _, err := g.c.deliver(context.Background(), g.claims[2], &result.Envelope{Job: g.claims[2].Job}); err != nil {
		t.Fatal(err)
	}
	if s := g.sends(); len(s) != before+1 || !slices.Equal(s[len(s)-1], []string{"job2"}) {
		t.Fatalf("sends %v, want the late result alone last", s)
	}
}

// TestGroupLeaverSendsTheRest: a group's job that ends without a result
// (it failed, or was released unrun) lets the others' results leave at
// once when it was the last they waited for. Control: the same group
// with no job leaving sends nothing.
func TestGroupLeaverSendsTheRest(t *testing.T) {
	for _, leave := range []bool{true, false} {
		g := newGroupRig(3, time.Hour)
		a, b := g.deliverAsync(0), g.deliverAsync(1)
		g.waitReady(t, 2)
		if leave {
			g.c.leaveGroup(context.Background(), g.claims[2].Job)
			for _, ch := range []chan error{a, b} {
				if err := <-ch; err != nil {
					t.Fatal(err)
				}
			}
			g.c.bg.Wait()
			if s := g.sends(); len(s) != 1 || !slices.Equal(s[0], []string{"job0", "job1"}) {
				t.Fatalf("sends %v, want job0 and job1 together", s)
			}
			continue
		}
		select {
		case <-a:
			t.Fatal("control: a result left though its group's last job neither ended nor left")
		case <-time.After(50 * time.Millisecond):
		}
		g.c.leaveGroup(context.Background(), g.claims[2].Job)
		<-a
		<-b
	}
}

// TestGroupResultsSentOnStop: a client stopping while its results wait
// for their group sends them at once rather than give computed results
// back.
func TestGroupResultsSentOnStop(t *testing.T) {
	g := newGroupRig(3, time.Hour)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := g.c.deliver(ctx, g.claims[0], &result.Envelope{Job: g.claims[0].Job})
		done <- err
	}()
	g.waitReady(t, 1)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("deliver on stop: %v, want the result sent", err)
	}
	if s := g.sends(); len(s) != 1 || !slices.Equal(s[0], []string{"job0"}) {
		t.Fatalf("sends %v, want job0 sent on stop", s)
	}
}
