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
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// brokenExecutor is a broken host: every job it runs fails.
type brokenExecutor struct{ client.Executor }

func (b brokenExecutor) Run(ctx context.Context, t runner.Task) (runner.Outcome, error) {
	return runner.Outcome{ExitCode: 1, Stderr: "segmentation fault"}, nil
}

// quotaNet is a network whose nodes require quota tickets, with jobs of
// the project lhc.
type quotaNet struct {
	f   *testnet.Fixture
	ctx context.Context
}

func startQuotaNet(t *testing.T, jobs int) *quotaNet {
	t.Helper()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 10, Seed: 73,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
	submitJobs(t, f.Project, jobs, "hashchain")
	f.Net.FlushAll(context.Background())
	return &quotaNet{f: f, ctx: context.Background()}
}

func (q *quotaNet) agent(t *testing.T, name string) *agent.Agent {
	t.Helper()
	a, err := q.f.Net.NewAgent(q.ctx, certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func (q *quotaNet) worker(t *testing.T, a *agent.Agent, exec client.Executor) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}}, Runner: exec, Slots: 1,
		Now: q.f.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// quotas are the client's quota at each of its 5 record nodes.
func (q *quotaNet) quotas(a *agent.Agent) []int {
	key := a.Identity().Key.Public().(ed25519.PublicKey)
	var out []int
	for _, p := range q.f.Net.TrueClosest(credit.Key(key), 5) {
		qt, _ := q.f.Net.Node(q.f.Net.Index(p)).Credit().Quota(key)
		out = append(out, qt)
	}
	return out
}

func all(qs []int, v int) bool {
	for _, q := range qs {
		if q != v {
			return false
		}
	}
	return len(qs) > 0
}

// claimer is a claimer of a's, with tickets when hold > 0.
func claimer(a *agent.Agent, hold time.Duration) *claimclient.Claimer {
	cl := claimclient.NewClaimer(a.Endpoint(), a.DHT(), nil, 0)
	cl.SetSigner(a.Identity().Key)
	if hold > 0 {
		cl.SetTickets(hold)
	}
	return cl
}

// TestQuotaBrokenHost: a client whose every job fails is down to the
// minimum quota at all of its record nodes after three jobs (8 → 4 → 2 →
// 1), and can then hold one job at a time; an honest client beside it
// keeps its quota and holds several. A claim without a ticket is refused
// by the replicas.
func TestQuotaBrokenHost(t *testing.T) {
	q := startQuotaNet(t, 14)
	brokenAgent, honestAgent := q.agent(t, "broken"), q.agent(t, "honest")
	broken := q.worker(t, brokenAgent, brokenExecutor{newRunner(t, map[string][]string{"lhc": {"*"}})})
	honest := q.worker(t, honestAgent, newRunner(t, map[string][]string{"lhc": {"*"}}))
	for i := range 3 {
		for _, c := range []*client.Client{broken, honest} {
			if ran, err := c.RunOne(q.ctx, "lhc"); !ran || err != nil {
				t.Fatalf("round %d: ran %v, %v", i, ran, err)
			}
		}
		q.f.Net.FlushAll(q.ctx)
	}
	if !testkit.Poll(10*time.Second, func() bool { return all(q.quotas(brokenAgent), quota.DefaultMin) }) {
		t.Fatalf("broken client's quota at its record nodes %v after 3 failed jobs, want %d everywhere", q.quotas(brokenAgent), quota.DefaultMin)
	}
	if qs := q.quotas(honestAgent); !all(qs, quota.DefaultInitial) {
		t.Fatalf("honest client's quota %v, want %d everywhere (unaffected)", qs, quota.DefaultInitial)
	}
	hits, err := brokenAgent.Index().Find(q.ctx, "lhc", 6)
	if err != nil || len(hits) < 4 {
		t.Fatalf("find: %d hits, %v", len(hits), err)
	}
	// The broken host holds one job; a second is refused by its record node.
	bc := claimer(brokenAgent, time.Hour)
	if _, err := bc.Claim(q.ctx, hits[0].Job); err != nil {
		t.Fatalf("broken client's first claim: %v", err)
	}
	if _, err := bc.Claim(q.ctx, hits[1].Job); !errors.Is(err, claimclient.ErrOverQuota) {
		t.Fatalf("broken client's second claim: %v, want ErrOverQuota", err)
	}
	// The honest one holds two at once (control: the refusal is the quota's).
	hc := claimer(honestAgent, time.Hour)
	for _, h := range hits[2:4] {
		if _, err := hc.Claim(q.ctx, h.Job); err != nil {
			t.Fatalf("honest client's claim: %v", err)
		}
	}
	// Without a ticket the replicas refuse the claim.
	if _, err := claimer(q.agent(t, "ticketless"), 0).Claim(q.ctx, hits[4].Job); err == nil || !strings.Contains(err.Error(), "no valid quota ticket") {
		t.Fatalf("claim without a ticket: %v, want refused for want of one", err)
	}
}

// TestQuotaHoarder: a client that claims and never finishes gets its
// initial quota of tickets and no more; a reported end gives one back.
func TestQuotaHoarder(t *testing.T) {
	q := startQuotaNet(t, quota.DefaultInitial+2)
	a := q.agent(t, "hoarder")
	hits, err := a.Index().Find(q.ctx, "lhc", quota.DefaultInitial+2)
	if err != nil || len(hits) != quota.DefaultInitial+2 {
		t.Fatalf("find: %d hits, %v", len(hits), err)
	}
	cl := claimer(a, time.Hour)
	for i, h := range hits[:quota.DefaultInitial] {
		if _, err := cl.Claim(q.ctx, h.Job); err != nil {
			t.Fatalf("claim %d: %v", i+1, err)
		}
	}
	next := hits[quota.DefaultInitial].Job
	if _, err := cl.Claim(q.ctx, next); !errors.Is(err, claimclient.ErrOverQuota) {
		t.Fatalf("claim %d: %v, want ErrOverQuota", quota.DefaultInitial+1, err)
	}
	if err := cl.Report(q.ctx, hits[0].Job, quota.Done); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Claim(q.ctx, next); err != nil {
		t.Fatalf("claim after a reported end: %v", err)
	}
}
