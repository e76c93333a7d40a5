package claimnet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/testnet/testkit"
)

// submitNet is a network of exactly r = 5 nodes with one job claimed by a
// client, and the client's sealed result for it.
func submitNet(t *testing.T, seed uint64) (*claimNet, *claimclient.Claimer, *claimclient.Claim, []byte) {
	t.Helper()
	cn := startClaimNet(t, 5, 1, seed)
	key := cn.keys[0]
	a, cl := cn.client(t, "volunteer")
	won, err := cl.Claim(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(won.Nodes) != 5 {
		t.Fatalf("claim on %d nodes, want 5", len(won.Nodes))
	}
	return cn, cl, won, sealFor(t, cn, a, key)
}

func sealFor(t *testing.T, cn *claimNet, a *agent.Agent, key []byte) []byte {
	t.Helper()
	env, err := result.Seal(result.Inner{Job: key, ClientCert: a.Identity().Cert.Raw, Output: []byte("42"), At: cn.clock.Now().UnixMilli()},
		a.Identity().Key, cn.proj.Agent().Identity().ResultPublicKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return env.Encode()
}

// kill stops the claim's nodes but the nearest.
func (cn *claimNet) killAllBut(t *testing.T, won *claimclient.Claim, keep int) []int {
	t.Helper()
	var killed []int
	for _, n := range won.Nodes[keep:] {
		i := cn.net.Index(n)
		if err := cn.net.Kill(i); err != nil {
			t.Fatal(err)
		}
		killed = append(killed, i)
	}
	return killed
}

// TestResultNeedsMajority: a result stored by 1 of the job's 5 replicas is
// not delivered (that one copy may be lost, and the job would be finished
// with its result nowhere): the submit fails clearly, naming how many
// stored it of how many it needs.
func TestResultNeedsMajority(t *testing.T) {
	cn, cl, won, env := submitNet(t, 71)
	cn.killAllBut(t, won, 1)
	cl.SetSubmitBackoff(20*time.Millisecond, 3)
	stored, err := cl.SubmitResult(context.Background(), won, env)
	if err == nil {
		t.Fatalf("result stored on %d of 5 replicas counted delivered", stored)
	}
	if stored != 1 || !strings.Contains(err.Error(), "1 of its 5 replicas stored it, a majority is 3") {
		t.Fatalf("submit: stored %d, err %v; want 1, and an error saying 1 of 5 stored it", stored, err)
	}
}

// TestResultRetriedUntilMajority: the replicas that did not store a
// result are tried again with backoff: two of the claim's nodes that were
// down when the result was first sent come back, store it on a retry, and
// the submit succeeds with a majority.
func TestResultRetriedUntilMajority(t *testing.T) {
	cn, cl, won, env := submitNet(t, 72)
	killed := cn.killAllBut(t, won, 1)
	// Retries for about 90 s (waits capped at 1.6 s) and returns at the
	// first majority: restarting two nodes (join, then the catch-up
	// round) took longer than the 6 s of 8 tries under CI's race
	// detector, and longer than the 25 s of 20 tries in one full CI run.
	cl.SetSubmitBackoff(100*time.Millisecond, 60)
	first := cn.net.Node(cn.net.Index(won.Nodes[0])).Pool()
	type out struct {
		n   int
		err error
	}
	done := make(chan out, 1)
	go func() {
		n, err := cl.SubmitResult(context.Background(), won, env)
		done <- out{n, err}
	}()
	testkit.WaitFor(t, 10*time.Second, "the live node to store the result", func() bool {
		_, has := first.Result(won.Job)
		return has
	})
	for _, i := range killed[:2] {
		began := time.Now()
		if err := cn.net.Restart(context.Background(), i); err != nil {
			t.Fatal(err)
		}
		t.Logf("node %d restarted in %v", i, time.Since(began))
	}
	got := <-done
	if got.err != nil || got.n < 3 {
		t.Fatalf("submit after two replicas came back: stored %d, err %v; want a majority (3)", got.n, got.err)
	}
}
