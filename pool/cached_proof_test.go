package pool_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// TestCachedProofChecksEnvelope: a replica that proved a finished state
// once (its proof cached by digest) lost the job and got it again, ready.
// A lying node then sends the same finished state and proof with another
// envelope — a real result of the same client for the job, but not the
// one the state names. The replica refuses it as forged and keeps no
// envelope; the true envelope is then taken. Before, the cached proof let
// any envelope bytes through, stored as the job's result.
func TestCachedProofChecksEnvelope(t *testing.T) {
	pn := startPoolNet(t, 8, 2, 53)
	key := pn.keys[0]
	holders := pn.net.Holders(key)
	if len(holders) < 2 {
		t.Fatalf("job held by %v", holders)
	}
	target, honest := holders[0], holders[1]
	tp := pn.net.Node(target).Pool()
	client := pn.newClient(t)
	at := pn.clock.Now().UnixMilli()
	st, proof, env := pn.finished(t, key, client, at)
	_, _, wrong := pn.finished(t, key, client, at) // another sealing: another digest
	pn.merge(t, target, key, st, proof, env)       // proven, and cached
	if err := tp.Forget(key); err != nil {
		t.Fatal(err)
	}
	jobEnv, err := pn.net.Node(honest).Pool().Envelope(key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var resp wire.StoreResponse
	if err := pn.net.Node(honest).Endpoint().Call(ctx, pn.net.Node(target).ID(), wire.ProtoJobStore,
		&wire.StoreRequest{Jobs: []wire.JobEnvelope{jobEnv}}, wire.MaxJobFrame, &resp); err != nil {
		t.Fatal(err)
	}
	if got, ok := tp.State(key); !ok || got.Phase != job.Ready {
		t.Fatalf("after the re-store the target holds %v, state %+v; want it ready", ok, got)
	}
	if _, err := tp.Merge(key, st, proof, wrong); err == nil {
		t.Error("the finished state with another envelope was taken")
	}
	if b, ok := tp.Result(key); ok {
		e, _ := result.Decode(b)
		if e == nil || !bytes.Equal(e.Digest(), st.Result) {
			t.Fatal("the replica keeps an envelope its state does not name")
		}
	}
	pn.merge(t, target, key, st, proof, env)
	if b, ok := tp.Result(key); !ok || !bytes.Equal(b, env) {
		t.Error("the true envelope was not taken after the lie")
	}
}
