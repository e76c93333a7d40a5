package pool_test

import (
	"context"
	"crypto/ed25519"
	"testing"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
)

// TestResultNotPassedToSent (issue 23): a replica hands a result on only
// to the job's closest nodes the client did not send it to itself
// (ResultSubmit.Sent). Sent to all of the job's r closest, no sync
// follows; sent to three of them, the two others get the finished state
// from a hand-on, without a republish round. The control names no nodes
// (as before): the replicas sync the result to each other, 4 to 8 syncs.
// A client that names nodes it skipped delays only its own result to
// them, to the next republish round.
func TestResultNotPassedToSent(t *testing.T) {
	for _, c := range []struct {
		name      string
		to, named int // replicas the result is sent to; of those, named in Sent
		wantSyncs func(int64) bool
	}{
		{"sent to all r, all named", 5, 5, func(n int64) bool { return n == 0 }},
		{"sent to 3, named", 3, 3, func(n int64) bool { return n > 0 && n <= 4 }},
		// A lying client: sent to 3, all 5 named. No hand-on; the two it
		// skipped get the finished state at the next republish round.
		{"lying client: sent to 3, 5 named", 3, 5, func(n int64) bool { return n == 0 }},
		// The closest stores first and syncs the other four; a replica
		// its sync reached first finds the result delivered before, so
		// 4 to 8 in all.
		{"control: none named", 5, 0, func(n int64) bool { return n >= 4 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			pn := startTrustingPoolNet(t, 12, 4, 43)
			key := pn.keys[0]
			closest := pn.closestIdx(key, 5)
			client := pn.newClient(t)
			now := pn.clock.Now().UnixMilli()
			claim := job.State{Phase: job.Claimed, Client: client.Key.Public().(ed25519.PublicKey), Start: now, Deadline: now + 3600_000}
			for _, i := range closest {
				if _, err := pn.net.Node(i).Pool().ApplyProven(key, claim, trustedClaim); err != nil {
					t.Fatal(err)
				}
			}
			env, err := result.Seal(result.Inner{Job: key, Output: []byte("42"), At: now}, client.Key, make([]byte, 32), nil)
			if err != nil {
				t.Fatal(err)
			}
			var sent [][]byte
			for _, i := range closest[:c.named] { // the first named are those sent to

				sent = append(sent, []byte(pn.net.Node(i).ID()))
			}
			before := pn.passedOn()
			for _, i := range closest[:c.to] {
				if err := pn.net.Node(i).Pool().SubmitResultSent(client.Cert.Raw, env.Encode(), now, sent); err != nil {
					t.Fatalf("result at node %d: %v", i, err)
				}
			}
			pn.quiesce()
			syncs := pn.passedOn() - before
			if !c.wantSyncs(syncs) {
				t.Fatalf("%d hand-on syncs", syncs)
			}
			if c.named > c.to {
				for _, i := range closest[c.to:] {
					if st, _ := pn.net.Node(i).Pool().State(key); st.Phase != job.Claimed {
						t.Fatalf("replica %d, named and skipped, holds the job as %s before a round, want claimed", i, st.Phase)
					}
				}
				pn.net.RepublishAll(context.Background())
				pn.quiesce()
			}
			for _, i := range closest {
				if st, _ := pn.net.Node(i).Pool().State(key); st.Phase != job.Finished {
					t.Fatalf("replica %d holds the job as %s after the hand-ons (and a round, for a lying client), want finished", i, st.Phase)
				}
			}
			t.Logf("%d hand-on syncs", syncs)
		})
	}
}

// passedOn sums the hand-on syncs of the running nodes.
func (pn *poolNet) passedOn() int64 {
	var n int64
	for _, nd := range pn.net.Live() {
		n += nd.Pool().PassedOn()
	}
	return n
}
