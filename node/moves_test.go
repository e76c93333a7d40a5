package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/loadbalance"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// TestMain doubles as `up app exec` for the clients' runners.
func TestMain(m *testing.M) { testkit.ExecMain(m, runner.Exec) }

// TestMovesDuringWork: nodes move to balance a hot keyword while clients
// claim and finish its jobs: no job is lost, none is claimed by two
// clients, every result is harvested.
func TestMovesDuringWork(t *testing.T) {
	jobs, workers := 400, 8
	if testing.Short() {
		jobs, workers = 100, 4
	}
	clock := testnet.NewClock(time.Now())
	opts := testnet.Options{Nodes: 24, Dir: t.TempDir(), Seed: 83, Now: clock.Now, PoolLoops: true}
	// Splits deeper than 20 bits are left alone: grinding them takes
	// seconds of every core, which would only slow the test.
	opts.Balance = node.BalanceConfig{MaxGrindBits: 20, Params: loadbalance.Params{CoolDown: 20_000, MinMoveInterval: 20_000, Trivial: 20}}
	// Republish often (in real time) so states reconcile during the run,
	// as they would over hours in a real network.
	opts.Pool.RepublishInterval, opts.Pool.RepublishJitter = 3*time.Second, time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Agent().Close()
	var prepared []*project.Prepared
	for i := range jobs {
		spec, _ := p.NewSpec("hashchain", []string{"100", fmt.Sprint(i)}, []string{"lhc"}, time.Hour)
		prep, err := p.Sign(spec)
		if err != nil {
			t.Fatal(err)
		}
		prepared = append(prepared, prep)
	}
	// Half the jobs now, half once a node moved: the clients finish the
	// first half within seconds, often before any balancing period moved
	// a node, and the second half is then worked on across the moves.
	// submit sends part, and sends again what fewer than r replicas
	// acknowledged, as an operator reruns 'up project submit': a node
	// moving at that moment (new identity, rejoining) may miss a store.
	submit := func(part []*project.Prepared) {
		t.Helper()
		for try := 0; len(part) > 0; try++ {
			var again []*project.Prepared
			var last error
			for i, r := range p.Submit(ctx, part) {
				if r.Err != nil {
					again, last = append(again, part[i]), r.Err
				}
			}
			if len(again) > 0 && try == 4 {
				t.Fatalf("%d jobs not submitted after %d tries: %v", len(again), try+1, last)
			}
			part = again
			if len(part) > 0 {
				time.Sleep(200 * time.Millisecond)
			}
		}
		net.FlushAll(ctx)
	}
	submit(prepared[:jobs/2])
	ran := newCompletions()

	// The protocol clock runs at ten times real time.
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				clock.Advance(time.Second)
			}
		}
	}()
	runCtx, stop := context.WithCancel(ctx)
	var wg, bal sync.WaitGroup
	defer func() { stop(); wg.Wait(); bal.Wait() }() // before the network closes
	for i := range workers {
		a, err := net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("w%d", i))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		r, err := runner.New(runner.Config{Launcher: testkit.Launcher(), WorkRoot: t.TempDir(),
			Allow: map[string][]string{"lhc": {"hashchain"}}, Env: testkit.LauncherEnv()})
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}}, Runner: r, Slots: 2,
			BackoffMin: 20 * time.Millisecond, BackoffMax: 300 * time.Millisecond, Now: clock.Now, Seed: uint64(i + 1),
			Logger: slog.New(ran.as(fmt.Sprintf("worker%d", i)))})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Run(runCtx)
		}()
	}
	// Balance while they work.
	var moves atomic.Int64
	bal.Add(1)
	go func() {
		defer bal.Done()
		for runCtx.Err() == nil {
			moves.Add(int64(net.BalanceAll(runCtx)))
			time.Sleep(200 * time.Millisecond)
		}
	}()
	testkit.WaitFor(t, 2*time.Minute, "a node to move (else the test does not test moves)", func() bool { return moves.Load() > 0 })
	submit(prepared[jobs/2:])
	finished := func() int {
		n := 0
		for _, pr := range prepared {
			for _, h := range net.Holders(pr.Key()) {
				if st, _ := net.Node(h).Pool().State(pr.Key()); st.Phase == job.Finished {
					n++
					break
				}
			}
		}
		return n
	}
	start := time.Now()
	for deadline := time.Now().Add(3 * time.Minute); finished() < jobs; {
		if time.Now().After(deadline) {
			for _, pr := range prepared {
				var states []string
				for _, h := range net.Holders(pr.Key()) {
					st, _ := net.Node(h).Pool().State(pr.Key())
					states = append(states, fmt.Sprintf("%d:%s", h, st.Phase))
				}
				done := false
				for _, s := range states {
					done = done || strings.HasSuffix(s, "finished")
				}
				if done {
					continue
				}
				entries := 0
				for _, nd := range net.Live() {
					if r, err := nd.Index().Query(&wire.IndexQueryRequest{Query: "lhc", Keyword: "lhc", N: 256, Page: true}); err == nil {
						for _, hit := range r.Hits {
							if string(hit.Job) == string(pr.Key()) {
								entries++
							}
						}
					}
				}
				t.Logf("unfinished %s: replicas %v, %d lhc entries", pr.CID(), states, entries)
			}
			t.Fatalf("only %d of %d jobs finished", finished(), jobs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("all finished after %v", time.Since(start))
	// A job is finished on its nodes once one replica stores the result;
	// its client logs it done once a majority did: let the last ones land.
	for deadline := time.Now().Add(30 * time.Second); ran.total() < jobs && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	bal.Wait()
	t.Logf("workers stopped after %v", time.Since(start))
	t.Logf("%d jobs finished by %d clients while %d moves happened", jobs, workers, moves.Load())

	// No job ran to completion at two clients, and every job ran once
	// (the clients' own logs: a node's claim log starts afresh when it
	// moves, so the node logs below only cover the claims since).
	total := 0
	for k, who := range ran.snapshot() {
		total += len(who)
		if len(who) > 1 {
			t.Fatalf("job %s completed by %v", k, who)
		}
	}
	if total != jobs {
		t.Fatalf("%d job completions for %d jobs", total, jobs)
	}
	// Zero double claims across every node's log.
	claimers := map[string]map[string]bool{}
	for _, nd := range net.Live() {
		for _, rec := range nd.Claims().Log() {
			if rec.Released {
				continue
			}
			if claimers[string(rec.Job)] == nil {
				claimers[string(rec.Job)] = map[string]bool{}
			}
			claimers[string(rec.Job)][string(rec.Client)] = true
		}
	}
	for k, cs := range claimers {
		if len(cs) > 1 {
			t.Fatalf("job %x claimed by %d clients", k, len(cs))
		}
	}
	// Every job is still there, finished; the project harvests every result.
	// Routing tables learn of moved nodes as kad-dht's refresh would (the
	// test runs with auto-refresh off); a period of republish and rewrite.
	if err := net.Refill(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(16 * time.Minute) // one T_rewrite: entries placed on stale views are rewritten or expire
	net.RepublishAll(ctx)
	ws := net.WriteAll(ctx) // a moved node's writer starts afresh: its first round lists its jobs
	for _, nd := range net.Live() {
		nd.Index().Expire()
	}
	t.Logf("final rewrite round after %v: %+v", time.Since(start), ws)
	got := map[string]int{}
	if _, err := p.Agent().Index().Harvest(ctx, job.FinishedKeyword("lhc"), 200, func(hits []wire.IndexHit) error {
		for _, h := range hits {
			got[string(h.Job)]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, pr := range prepared {
		if len(net.Holders(pr.Key())) == 0 {
			t.Fatalf("job %s lost", pr.CID())
		}
		if got[string(pr.Key())] != 1 {
			for _, h := range net.Holders(pr.Key()) {
				st, _ := net.Node(h).Pool().State(pr.Key())
				t.Logf("holder %d (%s): %s", h, net.Node(h).DHT().Self().Short(), st.Phase)
			}
			closest := net.TrueClosest(pr.Key(), 5)
			w := net.Node(net.Index(closest[0]))
			t.Logf("writer of the closest: %d entries kept, local view first: %v", w.Writer().Entries(), w.DHT().NearestLocal(keyspace.KeyPos(pr.Key()), 2))
			t.Logf("true closest: %v (first is node %d)", closest, net.Index(closest[0]))
			for _, nd := range net.Live() {
				if r, err := nd.Index().Query(&wire.IndexQueryRequest{Query: "lhc:finished", Keyword: "lhc:finished", N: 256, Page: true}); err == nil {
					for _, hit := range r.Hits {
						if string(hit.Job) == string(pr.Key()) {
							t.Logf("entry on node %s", nd.Name())
						}
					}
				}
			}
			t.Fatalf("job %s harvested %d times", pr.CID(), got[string(pr.Key())])
		}
	}
}

// completions records, from the clients' logs, which client completed
// which job.
type completions struct {
	mu   *sync.Mutex
	jobs map[string][]string
	name string
}

func newCompletions() *completions {
	return &completions{mu: &sync.Mutex{}, jobs: map[string][]string{}}
}

// as is the log handler of the client called name.
func (c *completions) as(name string) *completions {
	return &completions{mu: c.mu, jobs: c.jobs, name: name}
}

// total counts the completions logged so far.
func (c *completions) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, who := range c.jobs {
		n += len(who)
	}
	return n
}

func (c *completions) snapshot() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.jobs)
}

func (c *completions) Enabled(context.Context, slog.Level) bool { return true }
func (c *completions) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *completions) WithGroup(string) slog.Handler            { return c }
func (c *completions) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "job done" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "job" {
			c.mu.Lock()
			c.jobs[a.Value.String()] = append(c.jobs[a.Value.String()], c.name)
			c.mu.Unlock()
			return false
		}
		return true
	})
	return nil
}
