package claimnet_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

type claimNet struct {
	net   *testnet.Network
	clock *testnet.Clock
	proj  *project.Project
	keys  [][]byte
}

// startClaimNet starts a network of nodes with the project lhc and its
// jobs (hashchain, listed under lhc).
func startClaimNet(t *testing.T, nodes, jobs int, seed uint64) *claimNet {
	t.Helper()
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: nodes, Seed: seed})
	return &claimNet{net: f.Net, clock: f.Clock, proj: f.Project, keys: testnet.SubmitJobs(t, f.Project, jobs, testnet.Jobs{})}
}

func (cn *claimNet) client(t *testing.T, name string) (*agent.Agent, *claimclient.Claimer) {
	t.Helper()
	a, err := cn.net.NewAgent(context.Background(), certs.RoleClient, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	cl := claimclient.NewClaimer(a.Endpoint(), a.DHT(), cn.clock.Now, 0)
	// The certificate at once, as these tests look at every replica right
	// after a claim (TestResultCarriesCertificate covers the delay).
	cl.SetCertifyDelay(0)
	return a, cl
}

// states returns the job's replica states on its holders.
func (cn *claimNet) states(key []byte) []job.State {
	var out []job.State
	for _, i := range cn.net.Holders(key) {
		st, _ := cn.net.Node(i).Pool().State(key)
		out = append(out, st)
	}
	return out
}

// TestExactlyOneWinner: clients racing for one job: one wins, the others
// lose cleanly, every replica records the winner, and only the winner
// appears in the nodes' logs of permanent claims.
func TestExactlyOneWinner(t *testing.T) {
	cn := startClaimNet(t, 8, 5, 51)
	ctx := context.Background()
	for round, key := range cn.keys {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []string
		var losers int
		for c := range 6 {
			a, cl := cn.client(t, fmt.Sprintf("c%d-%d", round, c))
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := cl.Claim(ctx, key)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, a.Identity().Name)
				case errors.Is(err, claimclient.ErrLost):
					losers++
				default:
					losers++
					t.Logf("claim: %v", err)
				}
			}()
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("job %d: %d winners %v", round, len(winners), winners)
		}
		var claimedBy []byte
		for _, st := range cn.states(key) {
			if st.Phase != job.Claimed || (claimedBy != nil && string(st.Client) != string(claimedBy)) {
				t.Fatalf("job %d: replica state %+v", round, st)
			}
			claimedBy = st.Client
		}
		for _, nd := range cn.net.Live() {
			for _, rec := range nd.Claims().Log() {
				if string(rec.Job) == string(key) && string(rec.Client) != string(claimedBy) {
					t.Fatalf("job %d: node %s logged a permanent claim by another client", round, nd.Name())
				}
			}
		}
	}
}

// TestTempClaimLapses: a client that is granted but never confirms blocks
// others only until T_claim passes.
func TestTempClaimLapses(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 52)
	ctx := context.Background()
	key := cn.keys[0]
	a, _ := cn.client(t, "quitter")
	// The quitter asks every holder and then dies before confirming.
	for _, i := range cn.net.Holders(key) {
		var resp wire.ClaimResponse
		if err := a.Endpoint().Call(ctx, cn.net.Node(i).ID(), wire.ProtoClaim, &wire.ClaimRequest{Job: key}, 1<<16, &resp); err != nil {
			t.Fatal(err)
		}
	}
	_, b := cn.client(t, "patient")
	if _, err := b.Claim(ctx, key); !errors.Is(err, claimclient.ErrLost) {
		t.Fatalf("claim during the temporary claim: %v, want lost", err)
	}
	cn.clock.Advance(16 * time.Second) // T_claim is 15 s
	if _, err := b.Claim(ctx, key); err != nil {
		t.Fatalf("claim after T_claim: %v", err)
	}
}

// TestClaimLapsesAfterTFinish: a client that dies after claiming gives
// the job back after T_finish; another then claims it.
func TestClaimLapsesAfterTFinish(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 53)
	ctx := context.Background()
	key := cn.keys[0]
	_, a := cn.client(t, "dies")
	if _, err := a.Claim(ctx, key); err != nil {
		t.Fatal(err)
	}
	_, b := cn.client(t, "next")
	if _, err := b.Claim(ctx, key); !errors.Is(err, claimclient.ErrLost) {
		t.Fatalf("claim of a claimed job: %v", err)
	}
	cn.clock.Advance(time.Hour + time.Duration(claim.DefaultTSkew)*time.Millisecond + time.Second) // T_finish of these jobs, then T_skew
	for _, nd := range cn.net.Live() {
		nd.Pool().ExpireNow()
	}
	if _, err := b.Claim(ctx, key); err != nil {
		t.Fatalf("claim after T_finish: %v", err)
	}
}

// TestResults: a result in another client's name is refused; a result a
// node altered is detected by the project; a good one opens.
func TestResults(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 54)
	ctx := context.Background()
	key := cn.keys[0]
	winner, cl := cn.client(t, "winner")
	other, _ := cn.client(t, "other")
	c, err := cl.Claim(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	projKey := cn.proj.Agent().Identity().ResultPublicKey()
	seal := func(a *agent.Agent, out string) *result.Envelope {
		env, err := result.Seal(result.Inner{Job: key, ClientCert: a.Identity().Cert.Raw, Output: []byte(out), At: cn.clock.Now().UnixMilli()},
			a.Identity().Key, projKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	// The other client, in its own name: it holds no claim.
	forged := seal(other, "mine")
	if err := other.Endpoint().Call(ctx, c.Nodes[0], wire.ProtoResult,
		&wire.ResultSubmit{Envelope: forged.Encode(), At: cn.clock.Now().UnixMilli()}, 1024, &wire.Ping{}); err == nil || !strings.Contains(err.Error(), "not claimed by this client") {
		t.Fatalf("result without a claim: %v", err)
	}
	// The other client, in the winner's name (its envelope, re-signed
	// outside cannot be: it sends the winner's envelope as its own).
	good := seal(winner, "42")
	if err := other.Endpoint().Call(ctx, c.Nodes[0], wire.ProtoResult,
		&wire.ResultSubmit{Envelope: good.Encode(), At: cn.clock.Now().UnixMilli()}, 1024, &wire.Ping{}); err == nil || !strings.Contains(err.Error(), "another client") {
		t.Fatalf("result in another client's name: %v", err)
	}
	stored, err := cl.SubmitResult(ctx, c, good.Encode())
	if err != nil || stored != len(c.Nodes) {
		t.Fatalf("result stored on %d of %d nodes: %v", stored, len(c.Nodes), err)
	}
	for _, st := range cn.states(key) {
		if st.Phase != job.Finished {
			t.Fatalf("after the result a replica is %s", st.Phase)
		}
	}
	certKey := func(der []byte) (ed25519.PublicKey, error) {
		id, err := cn.proj.Agent().Endpoint().Admission().Verifier().VerifyCert(der, cn.clock.Now(), certs.RoleClient)
		if err != nil {
			return nil, err
		}
		return id.PublicKey, nil
	}
	raw, ok := cn.net.Node(cn.net.Index(c.Nodes[0])).Pool().Result(key)
	if !ok {
		t.Fatal("node has no result")
	}
	env, err := result.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	in, err := result.Open(env, cn.proj.Agent().Identity().ResultKey, certKey)
	if err != nil || string(in.Output) != "42" {
		t.Fatalf("open: %v %+v", err, in)
	}
	// A node alters the sealed bytes (re-signing is beyond it).
	env.Sealed[len(env.Sealed)/2] ^= 1
	if _, err := result.Open(env, cn.proj.Agent().Identity().ResultKey, certKey); !errors.Is(err, result.ErrForged) {
		t.Fatalf("altered result: %v, want ErrForged", err)
	}
}

// TestClaimRateLimit: a client flooding claims is refused beyond its rate;
// another client is not.
func TestClaimRateLimit(t *testing.T) {
	cn := startClaimNet(t, 6, 1, 55)
	ctx := context.Background()
	key := cn.keys[0]
	flood, _ := cn.client(t, "flood")
	calm, _ := cn.client(t, "calm")
	target := cn.net.Node(cn.net.Holders(key)[0]).ID()
	limited := 0
	for range 100 { // the clock stands still: only the burst (40) passes
		err := flood.Endpoint().Call(ctx, target, wire.ProtoClaim, &wire.ClaimRequest{Job: key}, 1<<16, &wire.ClaimResponse{})
		var we *wire.Error
		if errors.As(err, &we) && we.Status == wire.StatusRateLimited {
			limited++
		}
	}
	if limited != 60 {
		t.Fatalf("%d of 100 flooding claims limited, want 60", limited)
	}
	if err := calm.Endpoint().Call(ctx, target, wire.ProtoClaim, &wire.ClaimRequest{Job: key}, 1<<16, &wire.ClaimResponse{}); err != nil {
		t.Fatalf("another client limited too: %v", err)
	}
}

// TestSameClientClaimsOnce: two slots of one client racing for the same
// job: one wins, the other is told the client already holds it (a second
// confirm of the same claim, given up, would release the first while it
// runs). Released, the job can be claimed again, under a later start.
func TestSameClientClaimsOnce(t *testing.T) {
	cn := startClaimNet(t, 8, 1, 57)
	ctx := context.Background()
	key := cn.keys[0]
	_, cl := cn.client(t, "two-slots")
	var wg sync.WaitGroup
	claims := make([]*claimclient.Claim, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claims[i], errs[i] = cl.Claim(ctx, key)
		}()
	}
	wg.Wait()
	won := claims[0]
	if errs[0] != nil {
		won = claims[1]
		errs[0], errs[1] = errs[1], errs[0]
	}
	if errs[0] != nil || !errors.Is(errs[1], claimclient.ErrHeld) {
		t.Fatalf("two slots claiming: %v and %v; want one win and ErrHeld", errs[0], errs[1])
	}
	if err := won.Certified(ctx); err != nil {
		t.Fatal(err)
	}
	for _, st := range cn.states(key) {
		if st.Phase != job.Claimed || st.Start != won.Start {
			t.Fatalf("replica state %+v, want the claim started at %d", st, won.Start)
		}
	}
	cl.Release(ctx, won, wire.SkipUnknown)
	cn.clock.Advance(time.Millisecond) // the release lapses the claim
	again, err := cl.Claim(ctx, key)
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	if err := again.Certified(ctx); err != nil {
		t.Fatal(err)
	}
	if again.Start <= won.Start {
		t.Fatalf("new claim starts at %d, not after the released one at %d", again.Start, won.Start)
	}
	for _, st := range cn.states(key) {
		if st.Phase != job.Claimed || st.Start != again.Start {
			t.Fatalf("replica state %+v, want the new claim", st)
		}
	}
	if st := cl.Stats(); st.Won != 2 || st.Lost+st.Unknown+st.Failed != 0 {
		t.Fatalf("claimer stats %+v, want 2 won and no other attempt (held is none)", st)
	}
}

// TestClaimLogForgetsDeletedJobs: a node's log of permanent claims keeps a
// job's records while it holds the job and drops them when the job leaves
// its store (collected and kept T_collect), so the log stays bounded by the
// jobs held over a long run.
func TestClaimLogForgetsDeletedJobs(t *testing.T) {
	cn := startClaimNet(t, 8, 2, 53)
	ctx := context.Background()
	_, cl := cn.client(t, "w")
	for _, key := range cn.keys {
		if _, err := cl.Claim(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	logged := func(key []byte) (n int) {
		for _, nd := range cn.net.Live() {
			for _, rec := range nd.Claims().Log() {
				if string(rec.Job) == string(key) {
					n++
				}
			}
		}
		return n
	}
	gone, kept := cn.keys[0], cn.keys[1]
	// The quorum that accepted the confirm logs it (the spare, asked
	// beside the confirm, learns the claim from the certificate).
	if n := logged(gone); n != claim.Quorum(5) {
		t.Fatalf("%d permanent claims logged for the job, want %d", n, claim.Quorum(5))
	}
	collected := job.State{Phase: job.Collected, At: cn.clock.Now().UnixMilli()}
	for _, i := range cn.net.Holders(gone) {
		if _, err := cn.net.Node(i).Pool().Apply(gone, collected); err != nil {
			t.Fatal(err)
		}
	}
	cn.clock.Advance(3 * time.Hour) // past T_collect (2 h)
	for _, nd := range cn.net.Live() {
		nd.Pool().ExpireNow()
	}
	if n := logged(gone); n != 0 {
		t.Fatalf("%d claims still logged for a job deleted after T_collect", n)
	}
	if n := logged(kept); n != claim.Quorum(5) {
		t.Fatalf("%d claims logged for a job still held, want %d", n, claim.Quorum(5))
	}
}
