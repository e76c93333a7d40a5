package pool_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
)

// TestResultEnvelopeWrittenWithState: a replica serves a result's
// envelope as soon as it took the result (it went to the store in the
// finished state's batch: one write, so never the state without it —
// by construction, applyWith); and a replica whose state is finished
// but whose envelope was lost (the state does not change, so no batch
// carries it) stores it alone when the client sends it again
// (putAlone; without it the second check fails).
func TestResultEnvelopeWrittenWithState(t *testing.T) {
	pn := startPoolNet(t, 8, 2, 47)
	key := pn.keys[0]
	nd := pn.net.Node(pn.closestIdx(key, 1)[0]).Pool()
	cli, err := pn.net.NewAgent(t.Context(), certs.RoleClient, "volunteer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	now := pn.clock.Now().UnixMilli()
	pub := cli.Identity().Key.Public().(ed25519.PublicKey)
	if _, err := nd.Apply(key, job.State{Phase: job.Claimed, Client: pub, Start: now, Deadline: now + 3600_000}); err != nil {
		t.Fatal(err)
	}
	env, err := result.Seal(result.Inner{Job: key, ClientCert: cli.Identity().Cert.Raw, Output: []byte("42"), At: now},
		cli.Identity().Key, pn.proj.Agent().Identity().ResultPublicKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	held := func(when string) {
		t.Helper()
		st, _ := nd.State(key)
		if _, ok := nd.Result(key); !ok || st.Phase != job.Finished {
			t.Fatalf("%s: state %s, envelope held %v; want finished with it", when, st.Phase, ok)
		}
	}
	if err := nd.SubmitResult(cli.Identity().Cert.Raw, env.Encode(), now); err != nil {
		t.Fatal(err)
	}
	held("after the result")
	if err := nd.DropEnvelopeForTests(key); err != nil {
		t.Fatal(err)
	}
	if _, ok := nd.Result(key); ok {
		t.Fatal("the envelope is still held after it was dropped (the control)")
	}
	if err := nd.SubmitResult(cli.Identity().Cert.Raw, env.Encode(), now); err != nil {
		t.Fatal(err)
	}
	held("after the result was sent again")
}
