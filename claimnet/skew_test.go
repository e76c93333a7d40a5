package claimnet_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// startSkewedClaimNet is startClaimNet with one clock per node (its claim
// service's and every other service's): skews[i] (ns) is added to the
// network clock at node i.
func startSkewedClaimNet(t *testing.T, nodes, jobs int, seed uint64) (*claimNet, []atomic.Int64) {
	t.Helper()
	clock := testnet.NewClock(time.Now())
	skews := make([]atomic.Int64, nodes)
	f := testnet.StartFixture(t, clock, testnet.Options{Nodes: nodes, Seed: seed,
		Configure: func(i int, cfg *node.Config) {
			cfg.Now = func() time.Time { return clock.Now().Add(time.Duration(skews[i].Load())) }
		}})
	cn := &claimNet{net: f.Net, clock: clock, proj: f.Project, keys: testnet.SubmitJobs(t, f.Project, jobs, testnet.Jobs{})}
	return cn, skews
}

// TestClaimWithSkewedReplicaClocks: of a job's five replicas one runs its
// clock 20 s fast and another 3 min slow. No rule compares two machines'
// clocks, so the job is still claimable, and of clients racing for it
// exactly one wins, on every replica.
func TestClaimWithSkewedReplicaClocks(t *testing.T) {
	cn, skews := startSkewedClaimNet(t, 7, 3, 61)
	ctx := context.Background()
	for round, key := range cn.keys {
		hs := cn.net.Holders(key)
		if len(hs) < 5 {
			t.Fatalf("job %d has %d replicas", round, len(hs))
		}
		for i := range skews {
			skews[i].Store(0)
		}
		skews[hs[round%len(hs)]].Store(int64(20 * time.Second))
		skews[hs[(round+1)%len(hs)]].Store(int64(-3 * time.Minute))
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []string
		for c := range 3 {
			a, cl := cn.client(t, fmt.Sprintf("skew%d-%d", round, c))
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := cl.Claim(ctx, key)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					winners = append(winners, a.Identity().Name)
				} else if !errors.Is(err, claimclient.ErrLost) {
					t.Logf("claim: %v", err)
				}
			}()
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("job %d: %d winners %v", round, len(winners), winners)
		}
		var by []byte
		for _, st := range cn.states(key) {
			if st.Phase != job.Claimed || (by != nil && string(st.Client) != string(by)) {
				t.Fatalf("job %d: replica state %+v", round, st)
			}
			by = st.Client
		}
	}
}

// TestClaimAfterFastClientReleased: a client whose clock runs 8 min fast
// claims a job and releases it. Its claim's tombstone starts 8 min ahead of
// the other clients' clocks, and a claim must start after it; the grants
// say where it starts, so a client with a true clock claims the job at
// once instead of waiting 8 min for its clock to pass it.
func TestClaimAfterFastClientReleased(t *testing.T) {
	cn, _ := startSkewedClaimNet(t, 7, 1, 67)
	ctx := context.Background()
	key := cn.keys[0]
	fastNow := func() time.Time { return cn.clock.Now().Add(8 * time.Minute) }
	a, err := cn.net.NewAgent(ctx, certs.RoleClient, "fast")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	fast := claimclient.NewClaimer(a.Endpoint(), a.DHT(), fastNow, 0)
	cl, err := fast.Claim(ctx, key)
	if err != nil {
		t.Fatalf("fast client's claim: %v", err)
	}
	fast.Release(ctx, cl, wire.SkipUnknown)
	_, honest := cn.client(t, "true-clock")
	cl2, err := honest.Claim(ctx, key)
	if err != nil {
		t.Fatalf("claim after the fast client released it: %v", err)
	}
	if err := cl2.Certified(ctx); err != nil {
		t.Fatal(err)
	}
	if cl2.Start <= cl.Start {
		t.Fatalf("new claim starts at %d, not after the released one's %d", cl2.Start, cl.Start)
	}
	for _, st := range cn.states(key) {
		if st.Phase != job.Claimed || st.Start != cl2.Start {
			t.Fatalf("replica state %v, want the second claim (start %d)", st, cl2.Start)
		}
	}
}
