package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// TestClaimManyClients: three clients claiming up to eight jobs of a
// place at once (Config.ClaimMany) run two submission batches of 24
// jobs: every job is run to a submitted result exactly once, none is
// claimed twice, and the claims went several jobs per request (fewer
// claim requests than jobs times r, none of one job alone but those a
// failed lockstep attempt retried).
func TestClaimManyClients(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 10, Seed: 93})
	var keys [][]byte
	for range 2 {
		keys = append(keys, testnet.SubmitJobs(t, f.Project, 24, testnet.Jobs{Batch: true,
			Args: func(i int) []string { return []string{"1000", fmt.Sprint(len(keys) + i)} }})...)
	}
	f.Net.FlushAll(context.Background()) // the jobs listed
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var clients []*client.Client
	var eps []*overlay.Endpoint
	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	for i := range 3 {
		a, err := f.Net.NewAgent(ctx, certs.RoleClient, fmt.Sprintf("many%d", i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		c, err := client.New(client.Config{
			Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}},
			Runner: newRunner(t, map[string][]string{"lhc": {"hashchain"}}), Slots: 2, ClaimMany: 8,
			BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Now: f.Clock.Now, Seed: uint64(i + 1),
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		clients, eps = append(clients, c), append(eps, a.Endpoint())
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Run(runCtx)
		}()
	}
	testkit.WaitFor(t, 90*time.Second, "every job done", func() bool { return doneSum(clients) >= len(keys) })
	stop()
	wg.Wait()
	if n := doneSum(clients); n != len(keys) {
		t.Errorf("clients completed %d jobs, want each of the %d once", n, len(keys))
	}
	for k, n := range testnet.ClaimedTwice(f.Net.ClaimLogs()...) {
		t.Errorf("job %x permanently claimed by %d clients", k, n)
	}
	sent := func(proto string) int {
		n := 0
		for _, ep := range eps {
			n += int(overlay.SumCounter(ep.Metrics().RPCSent, "protocol", proto))
		}
		return n
	}
	many, alone := sent(wire.ProtoClaimMany), sent(wire.ProtoClaim)
	t.Logf("%d jobs: %d many-claim requests, %d many-confirms, %d single claims, %d single confirms",
		len(keys), many, sent(wire.ProtoConfirmMany), alone, sent(wire.ProtoConfirm))
	if r := 5; many == 0 || many+alone >= len(keys)*r/2 {
		t.Errorf("%d many-claim and %d single claim requests for %d jobs: want several jobs per request", many, alone, len(keys))
	}
}

// TestClaimManyReleasesUnrun: a client that claims a batch's jobs eight at
// a time and stops after one job (MaxJobs) releases the seven it claimed
// and did not run: each is ready again on its replicas at once, not held
// until its T_finish.
func TestClaimManyReleasesUnrun(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 94})
	keys := testnet.SubmitJobs(t, f.Project, 8, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	f.Net.FlushAll(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := f.Net.NewAgent(ctx, certs.RoleClient, "one")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	c, err := client.New(client.Config{
		Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}},
		Runner: newRunner(t, map[string][]string{"lhc": {"hashchain"}}), Slots: 1, ClaimMany: 8, MaxJobs: 1,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Now: f.Clock.Now, Seed: 1,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Done() != 1 {
		t.Fatalf("%d jobs done, want 1", c.Done())
	}
	many := int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", wire.ProtoClaimMany))
	if many == 0 {
		t.Fatal("no many-claim request sent")
	}
	ready, claimed := 0, 0
	for _, k := range keys {
		for _, i := range f.Net.Holders(k) {
			switch st, _ := f.Net.Node(i).Pool().State(k); st.Phase {
			case job.Ready:
				ready++
			case job.Claimed:
				claimed++
			}
		}
	}
	// One job is finished (or still claimed on a replica the result has
	// not reached); the seven others are ready on every replica.
	if want := 7 * len(f.Net.Holders(keys[0])); ready < want {
		t.Errorf("%d replicas ready and %d claimed after the client stopped; want the 7 unrun jobs ready on all (%d)", ready, claimed, want)
	}
}
