package pool_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// TestLingeringCopyKeptUntilHandedOn: a node no longer among a job's r
// closest holds the job's only result (the result reached only it, and
// its pass-on failed). Past the replica expiry its final sync fails (the
// job's nodes refuse syncs): it keeps its copy, result included, rather
// than lose the result with it. Once the job's closest answers again, a
// later round hands the state on, the closest fetches the result, and
// only then is the lingering copy dropped.
func TestLingeringCopyKeptUntilHandedOn(t *testing.T) {
	pn := startPoolNet(t, 16, 8, 42)
	ctx := context.Background()
	key := pn.keys[0]
	first := pn.closestIdx(key, 6)
	away, standIn := first[0], first[5]
	if err := pn.net.Kill(away); err != nil {
		t.Fatal(err)
	}
	pn.net.RepublishAll(ctx)
	if _, ok := pn.net.Node(standIn).Pool().State(key); !ok {
		t.Fatalf("node %d did not stand in for the dead node", standIn)
	}
	pn.rejoin(t, []int{away})
	pn.net.RepublishAll(ctx)
	if slices.Contains(pn.closestIdx(key, 5), standIn) {
		t.Fatal("the stand-in is still among the r closest")
	}
	// Every other node refuses syncs from now on.
	for _, nd := range pn.net.Live() {
		if nd.ID() == pn.net.Node(standIn).ID() {
			continue
		}
		nd.Endpoint().Handle(wire.ProtoJobSync, wire.MaxJobFrame, []certs.Role{certs.RoleNode},
			func(context.Context, *overlay.Admitted, []byte) (any, error) {
				return nil, overlay.StatusErr(wire.StatusInternal, errors.New("sync refused (test)"))
			})
	}
	// A client's result reaches only the lingering node.
	cli, err := pn.net.NewAgent(ctx, certs.RoleClient, "volunteer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	pub := cli.Identity().Key.Public().(ed25519.PublicKey)
	lingering := pn.net.Node(standIn).Pool()
	now := pn.clock.Now().UnixMilli()
	if _, err := lingering.Apply(key, job.State{Phase: job.Claimed, Client: pub, Start: now, Deadline: now + 24*3600_000}); err != nil {
		t.Fatal(err)
	}
	env, err := result.Seal(result.Inner{Job: key, ClientCert: cli.Identity().Cert.Raw, Output: []byte("42"), At: now},
		cli.Identity().Key, pn.proj.Agent().Identity().ResultPublicKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := lingering.SubmitResult(cli.Identity().Cert.Raw, env.Encode(), now); err != nil {
		t.Fatal(err)
	}
	pn.quiesce()
	for _, nd := range pn.net.Live() {
		if _, has := nd.Pool().Result(key); has && nd.ID() != pn.net.Node(standIn).ID() {
			t.Fatalf("node %s got the result although it refuses syncs", nd.ID())
		}
	}
	// Past the replica expiry, the final sync fails: the copy stays.
	pn.clock.Advance(61 * time.Minute)
	lingering.RepublishRound(ctx)
	pn.quiesce()
	if _, held := lingering.State(key); !held {
		t.Fatal("the lingering node dropped the job's only result after a final sync that failed")
	}
	if _, has := lingering.Result(key); !has {
		t.Fatal("the lingering node kept the job but lost its result")
	}
	// The job's closest answers again (restarted, it serves syncs): the
	// copy is handed on, then dropped.
	if err := pn.net.Kill(away); err != nil {
		t.Fatal(err)
	}
	pn.rejoin(t, []int{away})
	closest := pn.net.Node(away).Pool()
	// The other nodes still refuse syncs, so each round marks some dead:
	// a round an hour on has them alive again and the copy past the
	// replica expiry.
	for round := 0; round < 4; round++ {
		pn.clock.Advance(61 * time.Minute)
		lingering.RepublishRound(ctx)
		pn.quiesce()
		if _, held := lingering.State(key); !held {
			break
		}
	}
	if _, held := lingering.State(key); held {
		t.Fatal("the lingering node still holds the job after the closest took its state and result")
	}
	if st, _ := closest.State(key); st.Phase != job.Finished {
		t.Fatalf("the job's closest holds it as %s, want finished", st.Phase)
	}
	if _, has := closest.Result(key); !has {
		t.Fatal("the lingering node dropped its copy before the job's closest had the result")
	}
}
