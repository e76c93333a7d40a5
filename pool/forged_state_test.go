package pool_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// forgeState has node forger send one forged state of key to node target,
// by job/sync or by job/store (one replica, as a node repairs another).
func forgeState(t *testing.T, pn *poolNet, forger, target int, key []byte, st job.State, viaStore bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	from, to := pn.net.Node(forger), pn.net.Node(target)
	if viaStore {
		env, err := to.Pool().Envelope(key) // the genuine job, with a forged state
		if err != nil {
			t.Fatal(err)
		}
		env.State = st
		req := &wire.StoreRequest{Jobs: []wire.JobEnvelope{env}}
		var resp wire.StoreResponse
		if err := from.Endpoint().Call(ctx, to.ID(), wire.ProtoJobStore, req, wire.MaxJobFrame, &resp); err != nil {
			t.Fatal(err)
		}
		return
	}
	req := &wire.SyncRequest{Items: []wire.SyncItem{{Key: key, State: st}}}
	var resp wire.SyncResponse
	if err := from.Endpoint().Call(ctx, to.ID(), wire.ProtoJobSync, req, wire.MaxJobFrame, &resp); err != nil {
		t.Fatal(err)
	}
}

// TestForgedStatesChangeNoReplica: one admitted node sends a job's
// replica a collected state the project never signed, or a finished state
// naming a result no client made (by sync, and by store). No replica
// takes it: after republish rounds and T_collect every replica still holds
// the job, ready to be claimed.
func TestForgedStatesChangeNoReplica(t *testing.T) {
	pn := startPoolNet(t, 8, 4, 171)
	now := pn.clock.Now().UnixMilli()
	forgeries := []struct {
		name string
		st   job.State
	}{
		{"collected", job.State{Phase: job.Collected, At: now}},
		{"finished with a made-up digest", job.State{Phase: job.Finished, Client: bytes.Repeat([]byte{7}, 32), At: now,
			Result: bytes.Repeat([]byte{9}, 32)}},
	}
	i := 0
	for _, f := range forgeries {
		for _, viaStore := range []bool{false, true} {
			key := pn.keys[i]
			i++
			holders := pn.net.Holders(key)
			if len(holders) < 2 {
				t.Fatalf("job held by %v", holders)
			}
			target := holders[0]
			forger := (target + 1) % pn.net.Len()
			forgeState(t, pn, forger, target, key, f.st, viaStore)
			pn.quiesce()
			pn.net.RepublishAll(context.Background())
			pn.quiesce()
			ev := pn.net.Node(target).Pool().Evidence()
			if len(ev) == 0 || ev[len(ev)-1].Peer != pn.net.Node(forger).ID().String() || ev[len(ev)-1].Phase != f.st.Phase.String() {
				t.Errorf("forged %s (store %v): evidence at node %d: %+v", f.name, viaStore, target, ev)
			} else {
				t.Logf("evidence: %s sent %s: %s", ev[len(ev)-1].Sender, ev[len(ev)-1].Phase, ev[len(ev)-1].Reason)
			}
			for _, h := range holders {
				st, ok := pn.net.Node(h).Pool().State(key)
				if !ok || st.Phase != job.Ready {
					t.Errorf("forged %s (store %v) from node %d to node %d: node %d holds %v, state %+v",
						f.name, viaStore, forger, target, h, ok, st)
				}
			}
		}
	}
	pn.clock.Advance(3 * time.Hour) // past T_collect
	for _, nd := range pn.net.Live() {
		nd.Pool().ExpireNow()
	}
	for _, key := range pn.keys {
		if h := pn.net.Holders(key); len(h) < 5 {
			t.Errorf("job %x: held by %v after T_collect", key[len(key)-4:], h)
		}
	}
}
