package claimnet_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// TestSubmitResults: a client that claimed the eight jobs of a batch
// delivers their results with one request per node, the eight envelopes
// under one outer signature (result.SignOuterBatch): every job ends
// Finished with its result on every replica, and no result went alone.
// Two envelopes of a second delivery are forged — one's sealed bytes
// altered under its batch path, one carrying another job's path — and
// only those two are refused (their jobs stay Claimed; the submit says
// why), the other six stored. Negative control: the forged envelopes
// fail VerifyOuter on their own (what the node checks).
func TestSubmitResults(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 93})
	keys := testnet.SubmitJobs(t, f.Project, 16, testnet.Jobs{Batch: true})
	cn := &claimNet{net: f.Net, clock: f.Clock, proj: f.Project, keys: keys}
	ctx := context.Background()
	a, cl := cn.client(t, "many")
	cl.SetSubmitBackoff(10*time.Millisecond, 2)
	id := a.Identity()
	client := []byte(id.Key.Public().(ed25519.PublicKey))
	deliver := func(batch [][]byte, forge func(envs []*result.Envelope)) ([]int, []error) {
		t.Helper()
		claims, errs := cl.ClaimMany(ctx, batch, f.Net.PlaceOf(batch[0]), nil)
		envs := make([]*result.Envelope, len(batch))
		for i, err := range errs {
			if err != nil {
				t.Fatalf("claim job %d: %v", i, err)
			}
			in := result.Inner{Job: batch[i], ClientCert: id.Cert.Raw, Output: []byte(fmt.Sprintf("out %d", i)), At: cn.clock.Now().UnixMilli()}
			if envs[i], err = result.SealInner(in, id.Key, f.Project.Agent().Identity().ResultPublicKey(), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := result.SignOuterBatch(envs, id.Key); err != nil {
			t.Fatal(err)
		}
		if forge != nil {
			forge(envs)
		}
		items := make([]claimclient.ResultItem, len(batch))
		for i := range batch {
			items[i] = claimclient.ResultItem{Claim: claims[i], Envelope: envs[i].Encode()}
		}
		return cl.SubmitResults(ctx, items)
	}
	sent := func(proto string) int {
		return int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", proto))
	}
	finished := func(k []byte) bool {
		sts := cn.states(k)
		for _, st := range sts {
			if st.Phase != job.Finished || !bytes.Equal(st.Client, client) {
				return false
			}
		}
		return len(sts) == a.DHT().Replication()
	}

	first := keys[:8]
	counts, errs := deliver(first, nil)
	for i, err := range errs {
		if err != nil || counts[i] < 3 {
			t.Fatalf("job %d: stored on %d: %v", i, counts[i], err)
		}
	}
	r := a.DHT().Replication()
	if many, alone := sent(wire.ProtoResultManyShared), sent(wire.ProtoResult); many == 0 || many > r || alone != 0 || sent(wire.ProtoResultMany) != 0 {
		t.Errorf("8 results delivered with %d many-result requests and %d alone; want at most %d, none alone", many, alone, r)
	}
	for i, k := range first {
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("job %d finished on every replica", i), func() bool { return finished(k) })
	}

	second := keys[8:]
	forged := map[int]bool{2: true, 5: true}
	counts, errs = deliver(second, func(envs []*result.Envelope) {
		envs[2].Sealed = append([]byte(nil), envs[2].Sealed...)
		envs[2].Sealed[0] ^= 1
		envs[5].Path = envs[6].Path
		for i := range forged {
			if err := envs[i].VerifyOuter(); err == nil {
				t.Fatalf("control: forged envelope %d passes VerifyOuter", i)
			}
		}
	})
	for i, err := range errs {
		switch {
		case forged[i] && (err == nil || counts[i] != 0):
			t.Errorf("forged result %d: stored on %d, err %v; want refused everywhere", i, counts[i], err)
		case !forged[i] && (err != nil || counts[i] < 3):
			t.Errorf("result %d: stored on %d: %v", i, counts[i], err)
		}
	}
	for i, k := range second {
		if forged[i] {
			for _, st := range cn.states(k) {
				if st.Phase != job.Claimed {
					t.Errorf("forged result %d: a replica holds the job %s", i, st.Phase)
				}
			}
			continue
		}
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("job %d finished on every replica", i+8), func() bool { return finished(k) })
	}
}

// TestSubmitResultsOlderNodes: two of a batch's replicas do not serve
// the shared many-result protocol (an older version: "not found"); the
// results of the batch still reach every replica, those two asked the
// first way, and every job ends Finished everywhere. Control: without
// the older nodes no request goes the first way.
func TestSubmitResultsOlderNodes(t *testing.T) {
	for _, older := range []int{0, 2} {
		t.Run(fmt.Sprintf("%d older", older), func(t *testing.T) {
			f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 96})
			keys := testnet.SubmitJobs(t, f.Project, 8, testnet.Jobs{Batch: true})
			for _, i := range f.Net.Holders(keys[0])[:older] {
				f.Net.Node(i).Endpoint().Handle(wire.ProtoResultManyShared, wire.MaxResultsFrame, nil, func(context.Context, *overlay.Admitted, []byte) (any, error) {
					return nil, overlay.StatusErr(wire.StatusNotFound, errors.New("no such protocol"))
				})
			}
			cn := &claimNet{net: f.Net, clock: f.Clock, proj: f.Project, keys: keys}
			a, cl := cn.client(t, "many")
			id := a.Identity()
			claims, errs := cl.ClaimMany(context.Background(), keys, f.Net.PlaceOf(keys[0]), nil)
			envs := make([]*result.Envelope, len(keys))
			for i, err := range errs {
				if err != nil {
					t.Fatalf("claim job %d: %v", i, err)
				}
				in := result.Inner{Job: keys[i], ClientCert: id.Cert.Raw, Output: []byte{byte(i)}, At: cn.clock.Now().UnixMilli()}
				if envs[i], err = result.SealInner(in, id.Key, f.Project.Agent().Identity().ResultPublicKey(), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := result.SignOuterBatch(envs, id.Key); err != nil {
				t.Fatal(err)
			}
			items := make([]claimclient.ResultItem, len(keys))
			for i := range keys {
				items[i] = claimclient.ResultItem{Claim: claims[i], Envelope: envs[i].Encode()}
			}
			counts, errs := cl.SubmitResults(context.Background(), items)
			for i, err := range errs {
				if err != nil || counts[i] != a.DHT().Replication() {
					t.Fatalf("job %d: stored on %d: %v", i, counts[i], err)
				}
			}
			sent := func(proto string) int {
				return int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", proto))
			}
			t.Logf("many-results: %d the first way, %d shared", sent(wire.ProtoResultMany), sent(wire.ProtoResultManyShared))
			if sent(wire.ProtoResultMany) != older || sent(wire.ProtoResult) != 0 {
				t.Fatalf("%d many-results the first way, %d alone, with %d older replicas", sent(wire.ProtoResultMany), sent(wire.ProtoResult), older)
			}
			for i, k := range keys {
				testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("job %d finished on every replica", i), func() bool {
					for _, st := range cn.states(k) {
						if st.Phase != job.Finished {
							return false
						}
					}
					return len(cn.states(k)) == a.DHT().Replication()
				})
			}
		})
	}
}
