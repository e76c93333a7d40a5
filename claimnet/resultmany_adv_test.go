package claimnet_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// answerResultMany makes a node answer every many-result request, of
// either version, with answer(n) for a request of n results, storing
// none of them.
func answerResultMany(nd *node.Node, answer func(n int) *wire.ResultManyResponse) {
	clients := []certs.Role{certs.RoleClient}
	nd.Endpoint().Handle(protocol.ID(wire.ProtoResultMany), 2<<20, clients, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.ResultManyRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, err
		}
		return answer(len(req.Items)), nil
	})
	nd.Endpoint().Handle(protocol.ID(wire.ProtoResultManyShared), 2<<20, clients, func(_ context.Context, _ *overlay.Admitted, body []byte) (any, error) {
		var req wire.ResultManySharedRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, err
		}
		return answer(len(req.Items)), nil
	})
}

// TestSubmitResultsPastLyingReplicas: a client delivers the results of a
// batch's eight jobs in two many-result requests per replica; its clock is
// true, of the place's five replicas one runs 4 min slow and one 4 min
// fast, and some lie. First delivery: one replica says it stored every
// result and stores none, one answers with a count of verdicts that is not
// the request's (the client counts none of its verdicts). Each result is
// stored on 4 by the client's count — the liar's word and the three that
// did not lie (the skewed two take it: the result's time is within T_skew
// of their clocks) — and those three end Finished, by this client, with
// the result held (the liars may fetch it later by a sync: they are not
// asked to). A node's "stored" is a word the
// client cannot check, which is why the client sends every result to
// every replica and the honest ones must be a majority. Second delivery:
// the liar refuses every result with a made-up reason and two replicas
// miscount, so the request reaches no majority (2): the client sends each
// result alone to the three (their single-result handlers are honest)
// and counts 5. Controls: a replica 25 min slow refuses the result (the
// first count is 3: run by hand), and the counts of 4 and 5 are exact,
// so a fallback that did not run fails the second.
func TestSubmitResultsPastLyingReplicas(t *testing.T) {
	clock := testnet.NewClock(time.Now())
	const nodes = 8
	var skews [nodes]atomic.Int64
	f := testnet.StartFixture(t, clock, testnet.Options{Nodes: nodes, Seed: 97,
		Configure: func(i int, cfg *node.Config) {
			cfg.Now = func() time.Time { return clock.Now().Add(time.Duration(skews[i].Load())) }
		}})
	keys := testnet.SubmitJobs(t, f.Project, 8, testnet.Jobs{Batch: true})
	cn := &claimNet{net: f.Net, clock: clock, proj: f.Project, keys: keys}
	hs := f.Net.Holders(keys[0])
	if len(hs) != 5 {
		t.Fatalf("the batch's place has %d replicas, want 5", len(hs))
	}
	for _, k := range keys[1:] {
		if got := f.Net.Holders(k); fmt.Sprint(got) != fmt.Sprint(hs) {
			t.Fatalf("the batch's jobs are held by %v and %v", hs, got)
		}
	}
	liar, miscount, slow, fast, honest := hs[0], hs[1], hs[2], hs[3], hs[4]
	skews[slow].Store(int64(-4 * time.Minute))
	skews[fast].Store(int64(4 * time.Minute))
	storesAll := func(n int) *wire.ResultManyResponse { return &wire.ResultManyResponse{Refused: make([]string, n)} }
	miscounts := func(n int) *wire.ResultManyResponse { return &wire.ResultManyResponse{Refused: make([]string, n+1)} }
	refusesAll := func(n int) *wire.ResultManyResponse {
		r := &wire.ResultManyResponse{Refused: make([]string, n)}
		for i := range r.Refused {
			r.Refused[i] = "job not held here"
		}
		return r
	}

	ctx := context.Background()
	a, cl := cn.client(t, "results")
	cl.SetSubmitBackoff(10*time.Millisecond, 2)
	id := a.Identity()
	client := []byte(id.Key.Public().(ed25519.PublicKey))
	claims, errs := cl.ClaimMany(ctx, keys, f.Net.PlaceOf(keys[0]), nil)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claim job %d: %v", i, err)
		}
	}
	deliver := func(from, to, want int) {
		t.Helper()
		envs := make([]*result.Envelope, to-from)
		for i := range envs {
			in := result.Inner{Job: keys[from+i], ClientCert: id.Cert.Raw, Output: []byte(fmt.Sprintf("out %d", from+i)), At: clock.Now().UnixMilli()}
			var err error
			if envs[i], err = result.SealInner(in, id.Key, f.Project.Agent().Identity().ResultPublicKey(), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := result.SignOuterBatch(envs, id.Key); err != nil {
			t.Fatal(err)
		}
		items := make([]claimclient.ResultItem, len(envs))
		for i := range envs {
			items[i] = claimclient.ResultItem{Claim: claims[from+i], Envelope: envs[i].Encode()}
		}
		counts, errs := cl.SubmitResults(ctx, items)
		for i, err := range errs {
			if err != nil || counts[i] != want {
				t.Fatalf("result %d: stored on %d, want %d: %v", from+i, counts[i], want, err)
			}
		}
	}
	finishedOn := func(i, h int) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("result %d finished on node %d", i, h), func() bool {
			st, _ := f.Net.Node(h).Pool().State(keys[i])
			_, has := f.Net.Node(h).Pool().Result(keys[i])
			return has && st.Phase == job.Finished && bytes.Equal(st.Client, client)
		})
	}

	answerResultMany(f.Net.Node(liar), storesAll)
	answerResultMany(f.Net.Node(miscount), miscounts)
	deliver(0, 4, 4) // the liar's word, the skewed two's, the honest one's
	for i := range 4 {
		for _, h := range []int{slow, fast, honest} {
			finishedOn(i, h)
		}
	}

	answerResultMany(f.Net.Node(liar), refusesAll)
	answerResultMany(f.Net.Node(honest), miscounts)
	deliver(4, 8, 5)
	for i := 4; i < 8; i++ {
		for _, h := range hs {
			finishedOn(i, h)
		}
	}
}
