package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// TestClaimManyClients: three clients claiming up to eight jobs of a
// place at once (Config.ClaimMany) run two submission batches of 24
// jobs: every job is run to a submitted result exactly once, none is
// claimed twice, and the claims went several jobs per request (fewer
// claim requests than jobs times r, none of one job alone but those a
// failed lockstep attempt retried), and the specs of a group's entries
// were fetched together (fewer spec requests than jobs).
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
		c, err := newManyClient(t, f, a, 2, 0, uint64(i+1))
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
	many, alone := sent(wire.ProtoClaimManyShared), sent(wire.ProtoClaim)
	t.Logf("%d jobs: %d many-claim requests, %d many-confirms, %d single claims, %d single confirms",
		len(keys), many, sent(wire.ProtoConfirmManyShared), alone, sent(wire.ProtoConfirm))
	if r := 5; many == 0 || many+alone >= len(keys)*r/2 {
		t.Errorf("%d many-claim and %d single claim requests for %d jobs: want several jobs per request", many, alone, len(keys))
	}
	// The specs of a group's entries came in one request (prefetchSpecs):
	// fewer spec requests than jobs (one per job before).
	gets := sent(wire.ProtoJobGet)
	t.Logf("%d jobs: %d spec requests", len(keys), gets)
	if gets >= len(keys) {
		t.Errorf("%d spec requests for %d jobs: want the specs of a group fetched together", gets, len(keys))
	}
	// The results of a many-claim's jobs leave together (ResultLinger).
	manyResults, aloneResults := sent(wire.ProtoResultManyShared), sent(wire.ProtoResult)
	t.Logf("%d jobs: %d many-result requests, %d results alone", len(keys), manyResults, aloneResults)
	if r := 5; manyResults == 0 || manyResults+aloneResults >= len(keys)*r/2 {
		t.Errorf("%d many-result and %d single result requests for %d jobs: want several results per request", manyResults, aloneResults, len(keys))
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
	c, err := newManyClient(t, f, a, 1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Done() != 1 {
		t.Fatalf("%d jobs done, want 1", c.Done())
	}
	many := int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", wire.ProtoClaimManyShared))
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

// blocked is an executor whose runs wait until their context ends: a
// job that is running when the test acts.
type blocked struct{ started chan struct{} }

func (b *blocked) Allowed(project, app string) bool { return project == "lhc" && app == "hashchain" }
func (b *blocked) AllowedWASM(string) bool          { return false }
func (b *blocked) Run(ctx context.Context, _ runner.Task) (runner.Outcome, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return runner.Outcome{}, ctx.Err()
}

// TestClaimManyReleasedOnDetach: a client that claimed several jobs of a
// place at once, runs two (blocked, one per slot) and keeps the others,
// releases the kept ones as soon as it is detached from their project,
// rather than hold them while their T_finish runs; the running ones run
// on, as Detach leaves running jobs.
func TestClaimManyReleasedOnDetach(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 95})
	keys := testnet.SubmitJobs(t, f.Project, 48, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	f.Net.FlushAll(context.Background())
	a, err := f.Net.NewAgent(context.Background(), certs.RoleClient, "detached")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	exec := &blocked{started: make(chan struct{}, 2)}
	c, err := client.New(client.Config{
		Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}}, Runner: exec, Slots: 2, ClaimMany: 8,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Now: f.Clock.Now, Seed: 1,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	running(t, c)
	for range 2 { // both slots run a job that never ends
		select {
		case <-exec.started:
		case <-time.After(30 * time.Second):
			t.Fatal("no job started")
		}
	}
	claimedOn := func() (claimed int) {
		for _, k := range keys {
			for _, i := range f.Net.Holders(k) {
				if st, _ := f.Net.Node(i).Pool().State(k); st.Phase == job.Claimed {
					claimed++
				}
			}
		}
		return claimed
	}
	claimedJobs := func() (n int) {
		for _, k := range keys {
			for _, i := range f.Net.Holders(k) {
				if st, _ := f.Net.Node(i).Pool().State(k); st.Phase == job.Claimed {
					n++
					break
				}
			}
		}
		return n
	}
	if won := c.Status().Claims.Won; won < 3 {
		t.Fatalf("%d jobs won with the two running; want some kept beside them (the index served one entry of a place at a time)", won)
	}
	t.Logf("%d jobs won, %d replica claims before the detach", c.Status().Claims.Won, claimedOn())
	if err := c.Detach("lhc"); err != nil {
		t.Fatal(err)
	}
	// The two running jobs run on (Detach ends only the jobs not yet
	// running); the kept ones are released.
	if !testkit.Poll(20*time.Second, func() bool { return claimedJobs() == 2 }) {
		t.Fatalf("%d jobs still claimed 20 s after the detach, want the 2 running", claimedJobs())
	}
}

// TestPrefetchPastLyingReplicas: two of each job's five replicas lie
// to spec requests. Asked for a job, a liar sends it with its signature
// altered — which makes it another job (a job's key is the hash of its
// signed spec), so the client drops it; asked for a job it made up (the
// key of a real spec whose signature it altered, as a lying index entry
// would name), it sends that spec, which the client refuses for its
// signature. A client claiming eight at a time, whose group's specs come
// in one request, runs every real job, each once. Control: an honest
// holder's answer to the same request checks.
func TestPrefetchPastLyingReplicas(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 95})
	keys := testnet.SubmitJobs(t, f.Project, 16, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	f.Net.FlushAll(context.Background())
	hs := f.Net.Holders(keys[0])
	altered := func(env wire.JobEnvelope) (wire.JobEnvelope, []byte) {
		s, _, err := job.Decode(env.Signed)
		if err != nil {
			t.Fatal(err)
		}
		s.Sig = append([]byte(nil), s.Sig...)
		s.Sig[0] ^= 1
		env.Signed = s.Encode()
		return env, s.Key()
	}
	madeUp := map[string]wire.JobEnvelope{} // by made-up key
	var madeUpKeys [][]byte
	for _, k := range keys[:8] {
		env, err := f.Net.Node(hs[0]).Pool().Envelope(k)
		if err != nil {
			t.Fatal(err)
		}
		forged, key := altered(env)
		madeUp[string(key)] = forged
		madeUpKeys = append(madeUpKeys, key)
	}
	for _, i := range hs[:2] {
		nd := f.Net.Node(i)
		nd.Endpoint().Handle(wire.ProtoJobGet, wire.MaxJobFrame, nil, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
			var req wire.GetRequest
			if err := wire.Decode(body, &req); err != nil {
				return nil, err
			}
			resp := &wire.GetResponse{}
			for _, k := range req.Keys {
				if env, ok := madeUp[string(k)]; ok {
					resp.Jobs = append(resp.Jobs, env)
				} else if env, err := nd.Pool().Envelope(k); err == nil {
					env, _ = altered(env)
					resp.Jobs = append(resp.Jobs, env)
				}
			}
			if len(resp.Jobs) > 0 {
				_, spec, _ := job.Decode(resp.Jobs[0].Signed)
				if der, ok := nd.Pool().Cert(spec.CertRef); ok {
					resp.Certs = append(resp.Certs, der)
				}
			}
			return resp, nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := f.Net.NewAgent(ctx, certs.RoleClient, "wary")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ask := func(i int, ks [][]byte) map[string]error {
		t.Helper()
		errs, err := client.SpecErrs(ctx, a, f.Clock.Now(), f.Net.Node(i).ID(), ks)
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		return errs
	}
	for _, i := range hs[:2] {
		if got := ask(i, keys[:8]); len(got) != 0 {
			t.Errorf("liar %d: %d specs taken for the jobs asked, want none (each sent is another job)", i, len(got))
		}
		got := ask(i, madeUpKeys)
		for _, k := range madeUpKeys {
			if err, ok := got[string(k)]; !ok || !errors.Is(err, job.ErrBadSignature) {
				t.Errorf("liar %d: made-up job %x: taken %v, %v; want refused for its signature", i, k, ok, err)
			}
		}
	}
	if got := ask(hs[2], keys[:8]); len(got) != 8 || errors.Join(slices.Collect(maps.Values(got))...) != nil {
		t.Errorf("control, honest holder: %d specs, %v", len(got), got)
	}
	c, err := newManyClient(t, f, a, 2, len(keys), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Done() != len(keys) {
		t.Fatalf("%d jobs done, want %d", c.Done(), len(keys))
	}
	for k, n := range testnet.ClaimedTwice(f.Net.ClaimLogs()...) {
		t.Errorf("job %x permanently claimed by %d clients", k, n)
	}
}

// newManyClient is a client of project lhc on agent a claiming up to
// eight jobs of a place at once, with slots slots, stopping after
// maxJobs jobs (0: never), its randomness seeded by seed.
func newManyClient(t *testing.T, f *testnet.Fixture, a *agent.Agent, slots, maxJobs int, seed uint64) (*client.Client, error) {
	t.Helper()
	return client.New(client.Config{
		Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}},
		Runner: newRunner(t, map[string][]string{"lhc": {"hashchain"}}), Slots: slots, ClaimMany: 8, MaxJobs: maxJobs,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Now: f.Clock.Now, Seed: seed,
		Logger: slog.New(slog.DiscardHandler),
	})
}

// TestClaimGroupsChosen: a client left to choose its claim groups
// (ClaimMany 0, the default) claims its first job alone — the
// application never ran here, so its run time is unknown — and then
// several jobs of a place per request, the short jobs' groups bounded
// by the wire's bound and its quota, not by one. Control: ClaimMany 1
// makes every claim a single one.
func TestClaimGroupsChosen(t *testing.T) {
	for _, tc := range []struct {
		name      string
		claimMany int
		grouped   bool
	}{{"chosen", 0, true}, {"one at a time", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 97})
			keys := testnet.SubmitJobs(t, f.Project, 24, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"10", fmt.Sprint(i)} }})
			f.Net.FlushAll(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			a, err := f.Net.NewAgent(ctx, certs.RoleClient, "chooser")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			c, err := client.New(client.Config{
				Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}},
				Runner: newRunner(t, map[string][]string{"lhc": {"hashchain"}}), Slots: 2, ClaimMany: tc.claimMany,
				BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Now: f.Clock.Now, Seed: 1,
				Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = c.Run(runCtx) }()
			testkit.WaitFor(t, 90*time.Second, "every job done", func() bool { return c.Done() >= len(keys) })
			stop()
			<-done
			sent := func(proto string) int {
				return int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", proto))
			}
			many, alone := sent(wire.ProtoClaimManyShared), sent(wire.ProtoClaim)
			t.Logf("%d jobs: %d many-claim requests, %d single claims", len(keys), many, alone)
			if !tc.grouped {
				if many != 0 {
					t.Fatalf("%d many-claim requests with ClaimMany 1", many)
				}
				return
			}
			// Fewer requests than a job per request: the groups' sizes
			// ramp up with the quota and the entries served, so how many
			// fewer depends on timing.
			if r := 5; many == 0 || alone == 0 || many+alone >= len(keys)*r {
				t.Fatalf("%d many-claim and %d single claim requests for %d jobs: want the first job alone, then several per request", many, alone, len(keys))
			}
		})
	}
}
