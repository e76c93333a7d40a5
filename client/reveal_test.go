package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// TestRevealFreesSlot (issue 22): a job waiting to reveal its result holds
// its claim, not its slot. One one-slot client alone commits to one copy
// of each of four units of two copies (commit–reveal, reveal_wait 10 min)
// — every copy's sibling is a unit it ran, so only another client can
// take them — and a second one-slot client started then runs the four
// siblings: all eight results are revealed on their units' quorum, none
// after the wait. The control keeps each waiting job in its slot (as
// before): the first client commits to one copy and takes nothing else.
func TestRevealFreesSlot(t *testing.T) { revealSlotScenario(t, true) }

func TestRevealFreesSlotControl(t *testing.T) { revealSlotScenario(t, false) }

func revealSlotScenario(t *testing.T, free bool) {
	if !free {
		old := *client.MaxRevealing
		*client.MaxRevealing = 0
		t.Cleanup(func() { *client.MaxRevealing = old })
	}
	rn := startRevealNet(t, 4)
	alice := rn.start(t, "alice")
	if !free {
		testkit.WaitFor(t, time.Minute, "alice committing to one copy", func() bool { return revealing(alice) == 1 })
		// An absence cannot be awaited: alice polls her query every few
		// hundred ms, so in two seconds she had many chances to take more.
		time.Sleep(2 * time.Second)
		if n := revealing(alice); n != 1 || alice.Revealing() != 0 {
			t.Fatalf("control: alice waits on %d copies, %d with their slot freed (want 1 in her slot)", n, alice.Revealing())
		}
		return
	}
	testkit.WaitFor(t, time.Minute, "alice committing to a copy of every unit", func() bool { return alice.Revealing() == rn.units })
	rn.finish(t, alice, rn.start(t, "bob"))
	for _, c := range rn.clients {
		if tot := c.CommitTotals(); tot.Early != 0 {
			t.Fatalf("commit totals %+v (want no early reveal: under the quota)", tot)
		}
	}
}

// TestRevealQuotaStall (issue 22): a client whose every held job waits to
// reveal, at its quota (8 for a new client), reveals the oldest at once
// rather than waiting 10 min for siblings it leaves no room to run: alone
// with ten units of two copies, it commits to a copy of each (two and
// more revealed early), and a second client then runs the ten siblings.
// The control (no early reveal) stays at 8 commitments, its claims
// refused.
func TestRevealQuotaStall(t *testing.T) { revealQuotaScenario(t, true) }

func TestRevealQuotaStallControl(t *testing.T) { revealQuotaScenario(t, false) }

func revealQuotaScenario(t *testing.T, early bool) {
	if !early {
		*client.BreakStalls = false
		t.Cleanup(func() { *client.BreakStalls = true })
	}
	rn := startRevealNet(t, 10)
	alice := rn.start(t, "alice")
	if !early {
		testkit.WaitFor(t, time.Minute, "alice at her quota of 8 waiting copies", func() bool { return revealing(alice) == 8 })
		time.Sleep(2 * time.Second) // an absence: nothing revealed, nothing more claimed
		if n, tot := revealing(alice), alice.CommitTotals(); n != 8 || tot.Jobs != 0 {
			t.Fatalf("control: alice waits on %d copies, %+v (want 8, none revealed)", n, tot)
		}
		return
	}
	testkit.WaitFor(t, time.Minute, "alice committing to a copy of every unit", func() bool {
		return revealing(alice)+alice.Done() == rn.units
	})
	rn.finish(t, alice, rn.start(t, "bob"))
	if tot := alice.CommitTotals(); tot.Early < 2 {
		t.Fatalf("alice: %+v (want at least 2 early reveals: 10 units, quota 8)", tot)
	}
}

// revealNet is a network with units of two copies that commit before they
// reveal (reveal wait 10 min), and its one-slot clients.
type revealNet struct {
	net     *testnet.Network
	units   int
	ctx     context.Context
	clients []*client.Client
	wg      *sync.WaitGroup
}

func startRevealNet(t *testing.T, units int) *revealNet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 8, Dir: t.TempDir(), Seed: 73, PoolLoops: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		t.Fatal(err)
	}
	testnet.SubmitJobs(t, p, 2*units, testnet.Jobs{Args: func(i int) []string { return []string{"1000", fmt.Sprint(i / 2)} },
		Commit: 2, RevealWait: 10 * time.Minute})
	net.FlushAll(ctx)
	runCtx, stop := context.WithCancel(ctx)
	rn := &revealNet{net: net, units: units, ctx: runCtx}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		stop()
		wg.Wait()
		p.Agent().Close()
		net.Close()
		cancel()
	})
	rn.wg = &wg
	return rn
}

// start starts a one-slot client named name, counting commitments every
// 20 ms.
func (rn *revealNet) start(t *testing.T, name string) *client.Client {
	t.Helper()
	a, err := rn.net.NewAgent(rn.ctx, certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}},
		Runner: newRunner(t, map[string][]string{"lhc": {"hashchain"}}), Slots: 1, CommitPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rn.clients = append(rn.clients, c)
	rn.wg.Add(1)
	go func() {
		defer rn.wg.Done()
		_ = c.Run(rn.ctx)
	}()
	return c
}

// finish waits until the clients submitted every copy's result, none
// revealed after the reveal wait.
func (rn *revealNet) finish(t *testing.T, clients ...*client.Client) {
	t.Helper()
	testkit.WaitFor(t, 90*time.Second, "every copy revealed and submitted", func() bool { return doneSum(clients) == 2*rn.units })
	for _, c := range clients {
		if tot := c.CommitTotals(); tot.Jobs != rn.units || tot.Failed != 0 || tot.Timeouts != 0 {
			t.Fatalf("commit totals %+v (want %d commitments each, none revealed after the wait)", tot, rn.units)
		}
	}
}

// revealing counts the client's jobs that committed and wait to reveal.
func revealing(c *client.Client) int {
	n := 0
	for _, j := range c.Status().Running {
		if j.State == "revealing" {
			n++
		}
	}
	return n
}
