package client_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

type caseNet struct {
	net   *testnet.Network
	clock *testnet.Clock
	proj  *project.Project
}

func startCaseNet(t *testing.T, seed uint64) *caseNet {
	t.Helper()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: seed})
	return &caseNet{net: f.Net, clock: f.Clock, proj: f.Project}
}

func (cn *caseNet) submit(t *testing.T, app string, args []string, tFinish time.Duration) []byte {
	t.Helper()
	spec, err := cn.proj.NewSpec(app, args, []string{"lhc"}, tFinish)
	if err != nil {
		t.Fatal(err)
	}
	prep, err := cn.proj.Sign(spec)
	if err != nil {
		t.Fatal(err)
	}
	if r := cn.proj.Submit(context.Background(), []*project.Prepared{prep}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	cn.net.FlushAll(context.Background())
	return prep.Key()
}

// worker starts a one-slot client allowed to run allow for lhc; opts
// adjust its configuration.
func (cn *caseNet) worker(t *testing.T, name string, allow []string, opts ...func(*client.Config)) (*agent.Agent, *client.Client) {
	t.Helper()
	a, err := cn.net.NewAgent(context.Background(), certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	cfg := client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}},
		Runner: newRunner(t, map[string][]string{"lhc": allow}), Slots: 1, Now: cn.clock.Now, InputDir: t.TempDir()}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, c
}

func (cn *caseNet) state(key []byte) job.State {
	st, _ := cn.net.Node(cn.net.Holders(key)[0]).Pool().State(key)
	return st
}

func (cn *caseNet) open(t *testing.T, key []byte) *result.Inner {
	t.Helper()
	for _, h := range cn.net.Holders(key) {
		if raw, ok := cn.net.Node(h).Pool().Result(key); ok {
			env, err := result.Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			in, err := result.Open(env, cn.proj.Agent().Identity().ResultKey, func(der []byte) (ed25519.PublicKey, error) {
				id, err := cn.proj.Agent().Endpoint().Admission().Verifier().VerifyCert(der, cn.clock.Now(), certs.RoleClient)
				if err != nil {
					return nil, err
				}
				return id.PublicKey, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return in
		}
	}
	t.Fatalf("no result for job %x", key)
	return nil
}

// TestNotAllowedIsNotClaimed: a job whose application the volunteer did
// not allow is skipped before any claim, never run; it stays ready, and
// the index, told the client declined it, serves it to the next client at
// once rather than after the quarantine.
func TestNotAllowedIsNotClaimed(t *testing.T) {
	cn := startCaseNet(t, 62)
	key := cn.submit(t, "burn", []string{"100"}, time.Hour)
	_, c := cn.worker(t, "careful", []string{"hashchain"})
	ran, err := c.RunOne(context.Background(), "lhc")
	if ran || !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatalf("ran %v, err %v; want the job skipped and nothing else found", ran, err)
	}
	if st := cn.state(key); st.Phase != job.Ready {
		t.Fatalf("not-allowed job left %s", st.Phase)
	}
	if st := c.Status(); st.Done != 0 || st.Claims != (claimclient.Stats{}) {
		t.Fatalf("a not-allowed job was claimed or counted: %+v", st)
	}
	_, other := cn.worker(t, "burner", []string{"burn"})
	if ran, err := other.RunOne(context.Background(), "lhc"); !ran || err != nil {
		t.Fatalf("the next client: ran %v, err %v; want the declined job", ran, err)
	}
}

// TestFailedCopyDoesNotBlockUnit: a copy of a unit the client vetted but
// did not run (here: another client claimed it first) leaves the unit
// free, so the next copy is run, not skipped as a unit run here.
// Otherwise, with as many clients as copies, a unit whose claim failed
// once would never complete.
func TestFailedCopyDoesNotBlockUnit(t *testing.T) {
	cn := startCaseNet(t, 63)
	ctx := context.Background()
	a := cn.submit(t, "hashchain", []string{"10", "u"}, time.Hour)
	b := cn.submit(t, "hashchain", []string{"10", "u"}, time.Hour)
	rival, err := cn.net.NewAgent(ctx, certs.RoleClient, "rival")
	if err != nil {
		t.Fatal(err)
	}
	defer rival.Close()
	if _, err := claimclient.NewClaimer(rival.Endpoint(), rival.DHT(), cn.clock.Now, 0).Claim(ctx, a); err != nil {
		t.Fatal(err) // a stays listed: no writer withdraws it here
	}
	_, c := cn.worker(t, "w", []string{"hashchain"})
	for i := 0; i < 2 && cn.state(b).Phase != job.Finished; i++ {
		if _, err := c.RunOne(ctx, "lhc"); err != nil {
			t.Fatalf("cycle %d: %v", i+1, err)
		}
	}
	if st := cn.state(b); st.Phase != job.Finished {
		t.Fatalf("the second copy is %s after its unit's first copy was lost: want finished", st.Phase)
	}
}

// TestLimitsGiveErrorResult: a job exceeding its wall-clock limit is
// killed and reported to the project as an error result.
func TestLimitsGiveErrorResult(t *testing.T) {
	cn := startCaseNet(t, 63)
	key := cn.submit(t, "sleep", []string{"60000"}, 500*time.Millisecond)
	_, c := cn.worker(t, "w", []string{"sleep"})
	ran, err := c.RunOne(context.Background(), "lhc")
	if !ran || err != nil {
		t.Fatalf("ran %v, err %v", ran, err)
	}
	if st := cn.state(key); st.Phase != job.Finished {
		t.Fatalf("job is %s", st.Phase)
	}
	in := cn.open(t, key)
	if !strings.Contains(in.Error, "wall-clock limit") || in.ExitCode == 0 {
		t.Fatalf("result of a killed job: exit %d, error %q", in.ExitCode, in.Error)
	}
}

// TestCPULimitGivesErrorResult: a job that burns more CPU time than the
// client allows is killed by the runner, not run to its end, and reported
// to the project as an error result; the claim is kept (the result is
// submitted), not released.
func TestCPULimitGivesErrorResult(t *testing.T) {
	cn := startCaseNet(t, 66)
	// burn 60000 would spin for a minute of CPU time; without a CPU limit
	// the wall-clock limit (9 s of the 10 s T_finish) would end it.
	key := cn.submit(t, "burn", []string{"60000"}, 10*time.Second)
	_, c := cn.worker(t, "w", []string{"burn"}, func(cfg *client.Config) { cfg.MaxCPU = time.Second })
	ran, err := c.RunOne(context.Background(), "lhc")
	if !ran || err != nil {
		t.Fatalf("ran %v, err %v", ran, err)
	}
	if st := cn.state(key); st.Phase != job.Finished {
		t.Fatalf("job is %s, want finished with an error result", st.Phase)
	}
	in := cn.open(t, key)
	if !strings.Contains(in.Error, "cpu limit") || in.ExitCode == 0 || len(in.Output) != 0 {
		t.Fatalf("result of a job over its CPU limit: exit %d, error %q, output %q", in.ExitCode, in.Error, in.Output)
	}
	if cpu := time.Duration(in.CPU) * time.Millisecond; cpu < 900*time.Millisecond || cpu > 10*time.Second {
		t.Fatalf("the killed job used %v of CPU under a 1 s limit", cpu)
	}
	if st := c.Status(); st.Done != 1 || st.Failed != 0 {
		t.Fatalf("status done %d, failed %d; want the error result counted as done", st.Done, st.Failed)
	}
}

// TestKilledClientJobRedone: a client that dies after claiming: the job is
// ready again after T_finish and another client completes it.
func TestKilledClientJobRedone(t *testing.T) {
	cn := startCaseNet(t, 64)
	ctx := context.Background()
	key := cn.submit(t, "hashchain", []string{"10", "x"}, time.Hour)
	dying, err := cn.net.NewAgent(ctx, certs.RoleClient, "dying")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := claimclient.NewClaimer(dying.Endpoint(), dying.DHT(), cn.clock.Now, 0).Claim(ctx, key); err != nil {
		t.Fatal(err)
	}
	dying.Close() // dies without releasing
	cn.net.FlushAll(ctx)
	_, c := cn.worker(t, "heir", []string{"hashchain"})
	if _, err := c.RunOne(ctx, "lhc"); !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatalf("while claimed: %v, want no job", err)
	}
	cn.clock.Advance(time.Hour + time.Duration(claim.DefaultTSkew)*time.Millisecond + time.Second) // T_finish, then T_skew
	for _, nd := range cn.net.Live() {
		nd.Pool().ExpireNow()
	}
	cn.net.FlushAll(ctx) // the lapsed job is listed again
	if ran, err := c.RunOne(ctx, "lhc"); !ran || err != nil {
		t.Fatalf("after T_finish: ran %v, %v", ran, err)
	}
	if in := cn.open(t, key); in.ExitCode != 0 {
		t.Fatalf("result exit %d", in.ExitCode)
	}
}

// TestQueryRateLimit: a client flooding the index is slowed; another is not.
func TestQueryRateLimit(t *testing.T) {
	cn := startCaseNet(t, 65)
	cn.submit(t, "hashchain", []string{"1", "x"}, time.Hour)
	ctx := context.Background()
	flood, _ := cn.worker(t, "flood", nil)
	calm, _ := cn.worker(t, "calm", nil)
	limited := 0
	for range 100 {
		_, err := flood.Index().Find(ctx, "lhc", 1)
		var we *wire.Error
		if errors.As(err, &we) && we.Status == wire.StatusRateLimited {
			limited++
		}
	}
	if limited < 50 {
		t.Fatalf("only %d of 100 flooding queries limited", limited)
	}
	if _, err := calm.Index().Find(ctx, "lhc", 1); err != nil && !errors.Is(err, indexclient.ErrNoJob) {
		t.Fatalf("another client limited too: %v", err)
	}
}

// TestServedEntriesKeptForTheNextCycle: of a batch of entries served at
// once, those not tried because an earlier one was claimed are claimed in
// the next cycles, though the index holds them back (quarantine) from every
// new query for two minutes: left untried, they would be hidden from
// everyone meanwhile.
func TestServedEntriesKeptForTheNextCycle(t *testing.T) {
	cn := startCaseNet(t, 65)
	ctx := context.Background()
	a := cn.submit(t, "hashchain", []string{"10", "a"}, time.Hour)
	b := cn.submit(t, "hashchain", []string{"10", "b"}, time.Hour)
	_, c := cn.worker(t, "w", []string{"hashchain"}, func(cfg *client.Config) { cfg.FindBatch = 2 })
	for i := range 2 {
		if ran, err := c.RunOne(ctx, "lhc"); !ran || err != nil {
			t.Fatalf("cycle %d: ran %v, err %v", i+1, ran, err)
		}
	}
	for _, key := range [][]byte{a, b} {
		if st := cn.state(key); st.Phase != job.Finished {
			t.Fatalf("job %x is %s, want finished", key[len(key)-4:], st.Phase)
		}
	}
}
