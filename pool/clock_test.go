package pool_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/testnet"
)

// startSkewedPoolNet is startPoolNet with one clock offset per node: node
// i (its pool and every other service, which share the node's clock)
// reads the shared test clock plus skew[i], which a test sets to skew or
// jump that node's clock.
func startSkewedPoolNet(t *testing.T, nodes, jobs int, seed uint64) (*poolNet, []atomic.Int64) {
	t.Helper()
	clock := testnet.NewClock(time.Now())
	skew := make([]atomic.Int64, nodes)
	f := testnet.StartFixture(t, clock, testnet.Options{Nodes: nodes, Seed: seed,
		Configure: func(i int, cfg *node.Config) {
			cfg.Now = func() time.Time { return clock.Now().Add(time.Duration(skew[i].Load())) }
		}})
	return &poolNet{net: f.Net, clock: clock, proj: f.Project, keys: submit(t, f.Project, jobs)}, skew
}

// claimOn makes a fresh client's claim of key, starting now with the
// spec's T_finish, on the given nodes.
func (pn *poolNet) claimOn(t *testing.T, key []byte, nodes []int) (job.State, *keystore.Identity) {
	t.Helper()
	client := pn.newClient(t)
	h, ok := pn.net.Node(nodes[0]).Pool().Lookup(key)
	if !ok {
		t.Fatalf("node %d does not hold the job", nodes[0])
	}
	now := pn.clock.Now().UnixMilli()
	claim := job.State{Phase: job.Claimed, Client: client.Key.Public().(ed25519.PublicKey), Start: now, Deadline: now + h.TFinish}
	for _, i := range nodes {
		if _, err := pn.net.Node(i).Pool().Apply(key, claim); err != nil {
			t.Fatal(err)
		}
	}
	return claim, client
}

// TestClockJumpKeepsLiveClaim: the closest replica of a claimed job jumps
// its clock an hour ahead, past the claim's deadline, runs its expiry and
// republishes. The other replicas judge the claim on their own clocks: it
// stays live there. Once the jump is corrected the jumped replica holds
// the claim again, and the winner's result is accepted by all five.
// Before, the jumped node's ready tombstone outranked the claim on every
// replica, and the result was refused everywhere for good.
func TestClockJumpKeepsLiveClaim(t *testing.T) {
	pn, skew := startSkewedPoolNet(t, 6, 4, 71)
	ctx := context.Background()
	key := pn.keys[0]
	holders := pn.net.Holders(key)
	if len(holders) != 5 {
		t.Fatalf("job held by %v", holders)
	}
	claim, client := pn.claimOn(t, key, holders)
	pn.clock.Advance(30 * time.Minute) // with the jump, past deadline (1 h) + T_skew (20 min)
	jumper := pn.closestIdx(key, 1)[0]
	skew[jumper].Store(int64(time.Hour))
	if st, _ := pn.net.Node(jumper).Pool().State(key); st.Phase != job.Ready {
		t.Fatalf("the jumped node sees the claim as %s, want it lapsed on its own clock", st.Phase)
	}
	pn.net.Node(jumper).Pool().ExpireNow()
	pn.net.RepublishAll(ctx)
	pn.net.RepublishAll(ctx)
	for _, i := range holders {
		if i == jumper {
			continue
		}
		if st, _ := pn.net.Node(i).Pool().State(key); !job.Equal(st, claim) {
			t.Errorf("node %d holds %+v after the jumped node's rounds, want the live claim", i, st)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	skew[jumper].Store(0)
	pn.net.RepublishAll(ctx)
	if st, _ := pn.net.Node(jumper).Pool().State(key); !job.Equal(st, claim) {
		t.Fatalf("the corrected node holds %+v, want the claim back", st)
	}
	projectKey := make([]byte, 32)
	if _, err := rand.Read(projectKey); err != nil {
		t.Fatal(err)
	}
	env, err := result.Seal(result.Inner{Job: key, Output: []byte("42"), At: pn.clock.Now().UnixMilli()}, client.Key, projectKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := pn.clock.Now().UnixMilli()
	for _, i := range holders {
		if err := pn.net.Node(i).Pool().SubmitResult(client.Cert.Raw, env.Encode(), at); err != nil {
			t.Errorf("the winner's result at node %d: %v", i, err)
		}
	}
	pn.quiesce()
	for _, i := range holders {
		if st, _ := pn.net.Node(i).Pool().State(key); st.Phase != job.Finished || !bytes.Equal(st.Result, env.Digest()) {
			t.Errorf("node %d holds %+v, want finished with the winner's result", i, st)
		}
	}
}

// TestClaimLapsesTSkewAfterDeadline: a node lapses a claim only T_skew
// (20 min) after its deadline on its own clock, and a ready tombstone of
// the claim sent before then (by a node running older code, or lying)
// does not end it; from then on the job is ready on every replica.
func TestClaimLapsesTSkewAfterDeadline(t *testing.T) {
	pn, _ := startSkewedPoolNet(t, 6, 2, 72)
	ctx := context.Background()
	key := pn.keys[0]
	holders := pn.net.Holders(key)
	claim, _ := pn.claimOn(t, key, holders)
	tomb := job.State{Phase: job.Ready, Client: claim.Client, Start: claim.Start}
	pn.clock.Advance(time.Duration(claim.Deadline-claim.Start)*time.Millisecond + tSkew/2)
	for _, i := range holders {
		p := pn.net.Node(i).Pool()
		if lapsed, _ := p.ExpireNow(); lapsed != 0 {
			t.Errorf("node %d lapsed %d claims T_skew/2 past the deadline, within T_skew", i, lapsed)
		}
		if st, err := p.Apply(key, tomb); err != nil || !job.Equal(st, claim) {
			t.Errorf("node %d, told the claim's tombstone within T_skew: %+v, %v; want the claim", i, st, err)
		}
	}
	pn.clock.Advance(tSkew/2 + time.Second)
	for _, i := range holders {
		if lapsed, _ := pn.net.Node(i).Pool().ExpireNow(); lapsed != 1 {
			t.Errorf("node %d lapsed %d claims T_skew past the deadline, want 1", i, lapsed)
		}
	}
	pn.net.RepublishAll(ctx)
	for _, i := range holders {
		if st, _ := pn.net.Node(i).Pool().State(key); !job.Equal(st, tomb) {
			t.Errorf("node %d holds %+v, want the claim's tombstone", i, st)
		}
	}
}
