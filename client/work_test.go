package client_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/index"
	"github.com/up-pool/up/indexnet"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

func newRunner(t testing.TB, allow map[string][]string) *runner.Runner {
	t.Helper()
	r, err := runner.New(runner.Config{
		Launcher: testkit.Launcher(), WorkRoot: t.TempDir(), Allow: allow, Env: testkit.LauncherEnv(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// submitJobs submits n jobs of p running app with arguments 1000 and
// the job's number.
func submitJobs(t *testing.T, p *project.Project, n int, app string) [][]byte {
	t.Helper()
	return testnet.SubmitJobs(t, p, n, testnet.Jobs{App: app, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
}

// TestManyClients: 300 jobs, 20 clients running at once while nodes join,
// so the clients' views of the r closest differ, and an index that holds a
// served entry back for one tick only, so clients contend for the same
// jobs: every job completes exactly once from the project's side, no job
// is claimed by two clients, nodes did deny claims and answer don't-care,
// and clients that lost a claim went on to complete other jobs (most of
// them: one that loses its last tries near the end has nothing left).
//
// Four nodes are down while the jobs are placed and join during the run,
// holding none of them: asked as one of a job's r closest (the index
// entries' replica sets and the lookups name them), they answer
// don't-care, until a republish round soon after hands them their
// replicas.
// On mocknet a restarted node is linked to the running nodes only, so
// half the clients start after the join: those reach the newcomers, the
// first half do not and claim at the next closest instead. Views differ
// for the index writers too: a job's old closest node and its new one
// both write its entries a while, and the harvest finds every finished
// job all the same (index.TestAuthorship).
func TestManyClients(t *testing.T) {
	jobs, workers := 300, 20
	if testing.Short() { // the race detector's run: smaller, same shape
		// (Six clients met at a job too seldom to show contention.)
		jobs, workers = 60, 12
	}
	clock := testnet.NewClock(time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 20, Dir: t.TempDir(), Seed: 61, Now: clock.Now, PoolLoops: true,
		// Quarantine one protocol second, one tick of the clock below: an
		// entry whose claim has not been withdrawn by then is served again.
		Index: indexnet.Config{Server: indexnet.ServerConfig{Table: index.Config{Quarantine: 1000}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	late := []int{3, 8, 13, 17}
	for _, i := range late {
		if err := net.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Agent().Close()
	keys := submitJobs(t, p, jobs, "hashchain")

	// The protocol clock runs at ten times real time.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				clock.Advance(time.Second)
			}
		}
	}()
	finished := func() int {
		n := 0
		for _, k := range keys {
			for _, h := range net.Holders(k) {
				if st, _ := net.Node(h).Pool().State(k); st.Phase == job.Finished {
					n++
					break
				}
			}
		}
		return n
	}
	deadline := time.Now().Add(3 * time.Minute)
	awaitFinished := func(n int) {
		t.Helper()
		for finished() < n {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d jobs finished", finished(), len(keys))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	var clients []*client.Client
	var events []*eventLog
	runCtx, stopClients := context.WithCancel(ctx)
	var wg sync.WaitGroup
	startClients := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			ev := &eventLog{}
			a, err := net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("worker%02d", i))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			c, err := client.New(client.Config{
				Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}},
				Runner: newRunner(t, map[string][]string{"lhc": {"hashchain"}}), Slots: 2,
				BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Now: clock.Now, Seed: uint64(i + 1),
				Logger: slog.New(ev),
			})
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
			events = append(events, ev)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = c.Run(runCtx)
			}()
		}
	}
	defer wg.Wait()
	defer stopClients()
	startClients(0, workers/2)
	awaitFinished(len(keys) / 6) // the first claims ran before the join
	for _, i := range late {
		if err := net.Restart(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	startClients(workers/2, workers)
	// Once a newcomer answered don't-care, a republish round hands the
	// newcomers their replicas (left longer, a job whose closest node is
	// a newcomer holding nothing stays unlisted).
	for dontCare(net) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	net.RepublishAll(ctx)
	awaitFinished(len(keys))
	// A job is finished once one replica stored its result; its client
	// counts it done when r replicas acked. Stopping the clients before
	// then would make them give up a submitted job.
	for doneSum(clients) < len(keys) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stopClients()
	wg.Wait()
	// Every job was run to a submitted result once: redundant runs would
	// count twice here (the harvest below drops duplicates).
	done, lost, aborted, recovered := 0, 0, 0, 0
	for i, c := range clients {
		st := c.Status()
		done += st.Done
		lost += st.Claims.Lost
		if st.Claims.Lost > 0 {
			aborted++
			if events[i].doneAfterLoss() {
				recovered++
			}
		}
	}
	counts := claimCounts(net)
	t.Logf("%d jobs done by %d clients; %d clients lost %d claims, %d of them completed a job after; nodes answered %+v",
		done, workers, aborted, lost, recovered, counts)
	if done != len(keys) {
		t.Errorf("clients completed %d jobs, want each of the %d once", done, len(keys))
	}
	// Clients contended (nodes denied, clients aborted). Newcomers may or
	// may not have been asked before they were handed the jobs (don't-care
	// replies, logged above): that depends on timing.
	if counts.Denied == 0 || lost == 0 {
		t.Errorf("no contention shown: %d denied replies, %d claims lost", counts.Denied, lost)
	}
	// Aborting clients find other jobs. (A client may lose its last
	// attempts near the end, when the jobs left are taken: with quorum
	// claims most losses come late, so some, not most, recover.)
	if aborted > 0 && recovered == 0 {
		t.Errorf("only %d of the %d clients that lost a claim completed a job after it", recovered, aborted)
	}

	// No job was permanently claimed by two clients at any node (a claim
	// given back at once because its confirm failed elsewhere, possible
	// when the protocol outlasts T_claim, does not count).
	for k, n := range testnet.ClaimedTwice(net.ClaimLogs()...) {
		t.Fatalf("job %x claimed by %d clients", k, n)
	}

	// The project harvests: every job exactly once, each result opens.
	// One writer round (what each node's writer does every tick) places
	// any finished entry whose write failed under load.
	net.RepublishAll(ctx)
	net.FlushAll(ctx)
	net.WriteAll(ctx)
	// Harvest through an agent started now: on mocknet the project's agent
	// is not linked to the nodes that joined after it.
	harvester, err := net.NewAgent(ctx, certs.RoleProject, "harvester")
	if err != nil {
		t.Fatal(err)
	}
	defer harvester.Close()
	got := map[string]int{}
	_, err = harvester.Index().Harvest(ctx, job.FinishedKeyword("lhc"), 100, func(hits []wire.IndexHit) error {
		for _, h := range hits {
			got[string(h.Job)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	certKey := func(der []byte) (ed25519.PublicKey, error) {
		id, err := p.Agent().Endpoint().Admission().Verifier().VerifyCert(der, clock.Now(), certs.RoleClient)
		if err != nil {
			return nil, err
		}
		return id.PublicKey, nil
	}
	for _, k := range keys {
		if got[string(k)] != 1 {
			t.Fatalf("job %x harvested %d times\n%s", k[len(k)-4:], got[string(k)], whereIs(net, k))
		}
		raw, ok := []byte(nil), false
		for _, h := range net.Holders(k) {
			if raw, ok = net.Node(h).Pool().Result(k); ok {
				break
			}
		}
		if !ok {
			t.Fatalf("job %x: no node holds its result", k[len(k)-4:])
		}
		env, err := result.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		in, err := result.Open(env, p.Agent().Identity().ResultKey, certKey)
		if err != nil || in.ExitCode != 0 || len(in.Output) == 0 {
			t.Fatalf("job %x: result %v, exit %d", k[len(k)-4:], err, in.ExitCode)
		}
	}
}

// doneSum is the number of jobs the clients submitted results of.
func doneSum(clients []*client.Client) int {
	n := 0
	for _, c := range clients {
		n += c.Done()
	}
	return n
}

// whereIs describes, for a failed test, where job k stands on every live
// node: its replica state, where the node's writer placed its entries,
// and whether the node holds its finished entry.
func whereIs(net *testnet.Network, k []byte) string {
	finished := job.FinishedKeyword("lhc")
	out := fmt.Sprintf("closest first: %v\n", net.TrueClosest(k, 8))
	for _, nd := range net.Live() {
		st, held := nd.Pool().State(k)
		placed := nd.Writer().Placed(k)
		has := nd.Index().Has(finished, k)
		if held || len(placed) > 0 || has {
			out += fmt.Sprintf("  %s %s: held %v state %s, writer placed %v, holds finished entry %v\n",
				nd.Name(), nd.ID(), held, st.Phase, placed, has)
		}
	}
	return out
}

// claimCounts sums the running nodes' claim replies and confirms.
func claimCounts(net *testnet.Network) claimnet.Counts {
	var sum claimnet.Counts
	for _, nd := range net.Live() {
		c := nd.Claims().Counts()
		sum.Granted += c.Granted
		sum.Denied += c.Denied
		sum.DontCare += c.DontCare
		sum.Claimed += c.Claimed
		sum.Refused += c.Refused
	}
	return sum
}

func dontCare(net *testnet.Network) int { return claimCounts(net).DontCare }

// eventLog is a slog handler that keeps the messages a client logs at
// Info and above, in order.
type eventLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *eventLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelInfo }

func (l *eventLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	return nil
}

func (l *eventLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *eventLog) WithGroup(string) slog.Handler      { return l }

// doneAfterLoss reports whether the client completed a job after it first
// lost a claim.
func (l *eventLog) doneAfterLoss() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lost := false
	for _, m := range l.msgs {
		switch {
		case m == "claim lost":
			lost = true
		case lost && m == "job done":
			return true
		}
	}
	return false
}
