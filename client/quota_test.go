package client_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/client"
	"github.com/up-pool/up/credit"
	"github.com/up-pool/up/creditnet"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/quota"
	"github.com/up-pool/up/runner"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
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
	return startQuotaNetWith(t, jobs, creditnet.Config{})
}

func startQuotaNetWith(t *testing.T, jobs int, cfg creditnet.Config) *quotaNet {
	t.Helper()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 10, Seed: 73, Credit: cfg,
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
	// One job per claim: each RunOne below takes one job of the pool.
	c, err := client.New(client.Config{Agent: a, Projects: []client.Project{{Name: "lhc", Share: 1}}, Runner: exec, Slots: 1,
		ClaimMany: 1, Now: q.f.Clock.Now})
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

// accounts are the client's accounts at its 5 record nodes (nil where
// none).
func (q *quotaNet) accounts(a *agent.Agent) []*quota.Account {
	key := a.Identity().Key.Public().(ed25519.PublicKey)
	var out []*quota.Account
	for _, p := range q.f.Net.TrueClosest(credit.Key(key), 5) {
		out = append(out, q.f.Net.Node(q.f.Net.Index(p)).Credit().Account(key))
	}
	return out
}

func lies(as []*quota.Account) (n uint64) {
	for _, a := range as {
		if a != nil {
			n += a.Lies
		}
	}
	return n
}

// auditWait bounds the wait for a report's audit: beyond the audit's own
// bound, 3 × creditnet.Config.RPCTimeout (10 s).
const auditWait = 40 * time.Second

// TestQuotaLiar: with every reported end audited, a client that reports
// a job done while it still holds the claim is found out by the job's
// nodes: its quota drops to the minimum and the job is held again; an
// honest client's reports, audited alike, are found true.
func TestQuotaLiar(t *testing.T) {
	q := startQuotaNetWith(t, 6, creditnet.Config{AuditEvery: 1})
	honestAgent := q.agent(t, "honest")
	honest := q.worker(t, honestAgent, newRunner(t, map[string][]string{"lhc": {"*"}}))
	for range 2 {
		if ran, err := honest.RunOne(q.ctx, "lhc"); !ran || err != nil {
			t.Fatalf("honest: ran %v, %v", ran, err)
		}
	}
	liarAgent := q.agent(t, "liar")
	hits, err := liarAgent.Index().Find(q.ctx, "lhc", 2)
	if err != nil || len(hits) < 2 {
		t.Fatalf("find: %d hits, %v", len(hits), err)
	}
	cl := claimer(liarAgent, time.Hour)
	// The liar's claim certified before it lies: an uncertified claim is
	// sent (and audited) as ready, and voided T_cert after its acceptance
	// (a liar that never certifies holds its jobs that long at most).
	cl.SetCertifyDelay(0)
	won, err := cl.Claim(q.ctx, hits[0].Job)
	if err != nil {
		t.Fatal(err)
	}
	if err := won.Certified(q.ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Report(q.ctx, hits[0].Job, quota.Done); err != nil { // a lie: no result was sent
		t.Fatal(err)
	}
	if err := cl.FlushReports(q.ctx); err != nil {
		t.Fatal(err)
	}
	// An audit runs in the background for up to 3 × creditnet's
	// RPCTimeout (30 s): under CI's load one took longer than 10 s.
	if !testkit.Poll(auditWait, func() bool { return lies(q.accounts(liarAgent)) == 1 }) {
		t.Fatalf("the liar's false report was not found out: %+v", q.accounts(liarAgent))
	}
	for _, a := range q.accounts(liarAgent) {
		if a != nil && a.Lies == 1 && a.Quota != quota.DefaultMin {
			t.Fatalf("liar's quota %d where its lie was found, want %d", a.Quota, quota.DefaultMin)
		}
	}
	// The honest client's reports were audited too, and found true.
	if !testkit.Poll(10*time.Second, func() bool {
		for _, nd := range q.f.Net.Live() {
			if a := nd.Credit().Account(honestAgent.Identity().Key.Public().(ed25519.PublicKey)); a != nil && len(a.Reported) >= 2 {
				return true
			}
		}
		return false
	}) {
		t.Fatal("the honest client's two reports never arrived")
	}
	if n := lies(q.accounts(honestAgent)); n != 0 {
		t.Fatalf("honest client found lying %d times", n)
	}
}

// TestTicketNamesPlace: jobs signed in one batch share a place
// (job.PlaceKey), and a claim's ticket names it. A claim whose ticket
// names another place — the job's own key — is refused by the nodes
// that hold the job (control: the same client claims it with the
// place the index entry gives); the record node audits a report at the
// place the ticket named, so a liar's false report of a batch's job is
// found out as one of a job placed by its key is (TestQuotaLiar).
func TestTicketNamesPlace(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 16, Seed: 74, Credit: creditnet.Config{AuditEvery: 1},
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
	testnet.SubmitJobs(t, f.Project, 8, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	f.Net.FlushAll(context.Background())
	q := &quotaNet{f: f, ctx: context.Background()}
	liarAgent := q.agent(t, "liar")
	hits, err := liarAgent.Index().Find(q.ctx, "lhc", 8)
	if err != nil || len(hits) < 2 {
		t.Fatalf("find: %d hits, %v", len(hits), err)
	}
	place := job.PlaceKey(hits[0].Job, hits[0].Place)
	hint := f.Net.TrueClosest(place, 5)
	// The lie is told of a job most of whose key's 5 closest nodes do not
	// hold it: an audit there would find no majority holding it claimed.
	lie := -1
	for i, h := range hits {
		if string(job.PlaceKey(h.Job, h.Place)) != string(place) || string(place) == string(h.Job) {
			t.Fatalf("a batch's jobs are not placed together: %x, %x", hits[0].Place, h.Place)
		}
		shared := 0
		for _, n := range f.Net.TrueClosest(h.Job, 5) {
			if slices.Contains(hint, n) {
				shared++
			}
		}
		if shared < 3 && lie < 0 {
			lie = i
		}
	}
	if lie < 0 {
		t.Fatal("every job's key has a majority of its place's nodes among its own 5 closest: pick another seed")
	}
	other := hits[(lie+1)%len(hits)]
	cl := claimer(liarAgent, time.Hour)
	cl.SetCertifyDelay(0)
	if _, err := cl.ClaimAt(q.ctx, other.Job, other.Job, hint); err == nil || !strings.Contains(err.Error(), "another place") {
		t.Fatalf("a claim whose ticket names the job's key as its place: %v, want refused for the place", err)
	}
	won, err := cl.ClaimAt(q.ctx, hits[lie].Job, place, hint)
	if err != nil {
		t.Fatalf("control: a claim naming the job's place: %v", err)
	}
	if err := won.Certified(q.ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Report(q.ctx, hits[lie].Job, quota.Done); err != nil { // a lie: no result was sent
		t.Fatal(err)
	}
	if err := cl.FlushReports(q.ctx); err != nil {
		t.Fatal(err)
	}
	if !testkit.Poll(auditWait, func() bool { return lies(q.accounts(liarAgent)) == 1 }) {
		t.Fatalf("the liar's false report of a batch's job was not found out: %+v", q.accounts(liarAgent))
	}
}

// TestQuotaSkewedRecordNodes: tickets need no shared clock beyond T_skew.
// With the client's record nodes' clocks 5 min ahead of the job's
// replicas', the replicas take their tickets (dated within T_skew = 20
// min of their own clocks); 30 min ahead (a fault), they refuse them,
// saying why. The job is one whose replicas are none of the client's 7
// nearest record nodes, so only the record nodes' clocks are off.
func TestQuotaSkewedRecordNodes(t *testing.T) {
	for _, tc := range []struct {
		skew time.Duration
		ok   bool
	}{{5 * time.Minute, true}, {30 * time.Minute, false}} {
		t.Run(tc.skew.String(), func(t *testing.T) {
			f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 20, Seed: 75,
				Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
			submitJobs(t, f.Project, 40, "hashchain")
			f.Net.FlushAll(context.Background())
			q := &quotaNet{f: f, ctx: context.Background()}
			a := q.agent(t, "skewed")
			records := f.Net.TrueClosest(credit.Key(a.Identity().Key.Public().(ed25519.PublicKey)), 7)
			hits, err := a.Index().Find(q.ctx, "lhc", 40)
			if err != nil {
				t.Fatal(err)
			}
			var job []byte
			for _, h := range hits {
				apart := true
				for _, i := range f.Net.Holders(h.Job) {
					apart = apart && !slices.Contains(records, f.Net.Node(i).ID())
				}
				if apart {
					job = h.Job
					break
				}
			}
			if job == nil {
				t.Fatalf("none of %d jobs has its replicas apart from the client's record nodes", len(hits))
			}
			for _, p := range records {
				f.Net.SetClockOffset(f.Net.Index(p), tc.skew)
			}
			_, err = claimer(a, time.Hour).Claim(q.ctx, job)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("claim with a ticket from a record node %s ahead: %v", tc.skew, err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "no valid quota ticket")):
				t.Fatalf("claim with a ticket from a record node %s ahead: %v, want refused for the ticket's date", tc.skew, err)
			}
		})
	}
}

// TestTicketsForMany: a claimer with tickets claiming ten jobs of a
// batch at once (ClaimMany) asks its record node once for all their
// tickets (ProtoQuotaTicketManyOwn, one signature over them); the nodes,
// which require tickets, take them, verifying the record node's root
// once per request. A new client's quota is 8: eight jobs are won and
// the last two refused as over its quota, not claimed without a ticket;
// the claimer then knows its room is gone (TicketRoom).
func TestTicketsForMany(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 12, Seed: 76,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.RequireTicket = true }})
	keys := testnet.SubmitJobs(t, f.Project, 10, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	q := &quotaNet{f: f, ctx: context.Background()}
	a := q.agent(t, "many")
	cl := claimer(a, time.Hour)
	if room := cl.TicketRoom(); room != quota.DefaultInitial {
		t.Fatalf("room %d before any ticket, want the initial quota %d", room, quota.DefaultInitial)
	}
	claims, errs := cl.ClaimMany(q.ctx, keys, f.Net.PlaceOf(keys[0]), nil)
	won, over := 0, 0
	for i, err := range errs {
		switch {
		case err == nil && claims[i] != nil:
			won++
		case errors.Is(err, claimclient.ErrOverQuota):
			over++
		default:
			t.Errorf("job %d: %v", i, err)
		}
	}
	sent := func(proto string) int {
		return int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", proto))
	}
	if won != quota.DefaultInitial || over != len(keys)-quota.DefaultInitial {
		t.Errorf("%d won, %d over quota; want %d and %d", won, over, quota.DefaultInitial, len(keys)-quota.DefaultInitial)
	}
	// The partial grant showed the quota full: room for one more, to see
	// whether it grew, not for ten.
	if room := cl.TicketRoom(); room != 1 {
		t.Errorf("room %d after the quota filled, want 1", room)
	}
	if many, one := sent(wire.ProtoQuotaTicketManyOwn), sent(wire.ProtoQuotaTicket)+sent(wire.ProtoQuotaTicketMany); many != 1 || one != 0 {
		t.Errorf("%d many-ticket and %d ticket requests for %d jobs; want one many-ticket request", many, one, len(keys))
	}
}

// TestTicketRoomFromRecordNode: the record node says the client's quota
// in its many-ticket answer, and the client's room follows it: record
// nodes that start clients at 16 give ten tickets at once, and the room
// left is 16 − 10 = 6, where an estimate from the jobs held (the quota
// seen as the most held, 10) left room for one.
func TestTicketRoomFromRecordNode(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 12, Seed: 77,
		Configure: func(_ int, cfg *node.Config) {
			cfg.Claim.RequireTicket = true
			cfg.Credit.Quota.Initial = 16
		}})
	keys := testnet.SubmitJobs(t, f.Project, 10, testnet.Jobs{Batch: true, Args: func(i int) []string { return []string{"1000", fmt.Sprint(i)} }})
	q := &quotaNet{f: f, ctx: context.Background()}
	a := q.agent(t, "grown")
	cl := claimer(a, time.Hour)
	_, errs := cl.ClaimMany(q.ctx, keys, f.Net.PlaceOf(keys[0]), nil)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	if room := cl.TicketRoom(); room != 6 {
		t.Errorf("room %d after ten tickets under a quota of 16, want 6", room)
	}
}
