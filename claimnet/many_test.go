package claimnet_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestClaimMany: a client claims the eight jobs of a submission batch
// (one place, so one set of nodes) with one request per node: each node
// answers every job, granted, under one signature over its batch; one
// confirm per node makes them permanent, each acceptance batch-signed.
// Two confirms carry a lie — one another job's reply, one a reply altered
// under its batch path (a forged signature) — and only those two are
// refused (the altered one blamed on no node: its signature proves
// nothing); the other six jobs are claimed on every node, the two not.
func TestClaimMany(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 91})
	keys := testnet.SubmitJobs(t, f.Project, 8, testnet.Jobs{Batch: true})
	cn := &claimNet{net: f.Net, clock: f.Clock, proj: f.Project, keys: keys}
	a, _ := cn.client(t, "many")
	ctx := context.Background()
	holders := f.Net.Holders(keys[0])
	for _, k := range keys[1:] {
		if got := f.Net.Holders(k); len(got) != len(holders) {
			t.Fatalf("jobs of one batch on %v and %v", holders, got)
		}
	}
	replies := make([][][]byte, len(keys)) // per job, each holder's reply
	for _, i := range holders {
		var resp wire.ClaimManyResponse
		if err := a.Endpoint().Call(ctx, f.Net.Node(i).ID(), wire.ProtoClaimMany, &wire.ClaimManyRequest{Jobs: keys}, wire.MaxClaimManyBytes, &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Replies) != len(keys) {
			t.Fatalf("node %d: %d replies for %d jobs", i, len(resp.Replies), len(keys))
		}
		var root []byte
		for j, b := range resp.Replies {
			signed, st, err := claim.Decode(b)
			if err != nil || !bytes.Equal(st.Job, keys[j]) || st.Kind != claim.Granted || len(signed.Path) == 0 {
				t.Fatalf("node %d, job %d: %+v (path %d bytes): %v; want granted, batch-signed", i, j, st, len(signed.Path), err)
			}
			msg, err := signed.Message()
			if err != nil || (root != nil && !bytes.Equal(msg, root)) {
				t.Fatalf("node %d, job %d: not under the batch's one root: %v", i, j, err)
			}
			root = msg
			replies[j] = append(replies[j], b)
		}
	}
	const wrongJob, forged = 3, 5
	items := make([]wire.ConfirmRequest, len(keys))
	start := f.Clock.Now().UnixMilli()
	for j := range keys {
		items[j] = wire.ConfirmRequest{Job: keys[j], Start: start, Replies: append([][]byte(nil), replies[j]...)}
	}
	items[wrongJob].Replies[0] = replies[wrongJob+1][0]
	items[forged].Replies[1] = alterUnderPath(t, replies[forged][1])
	for _, i := range holders {
		var resp wire.ConfirmManyResponse
		if err := a.Endpoint().Call(ctx, f.Net.Node(i).ID(), wire.ProtoConfirmMany, &wire.ConfirmManyRequest{Items: items}, wire.MaxClaimManyBytes, &resp); err != nil {
			t.Fatal(err)
		}
		for j := range keys {
			switch {
			case j == wrongJob && !strings.Contains(resp.Refused[j], "another job"):
				t.Errorf("node %d: confirm with another job's reply: accepted %v, refused %q", i, resp.Accepts[j] != nil, resp.Refused[j])
			case j == forged && !strings.Contains(resp.Refused[j], claim.ErrBadSignature.Error()):
				t.Errorf("node %d: confirm with a forged reply: accepted %v, refused %q", i, resp.Accepts[j] != nil, resp.Refused[j])
			case j != wrongJob && j != forged:
				signed, st, err := claim.Decode(resp.Accepts[j])
				if err != nil || st.Kind != claim.Accepted || !bytes.Equal(st.Job, keys[j]) || st.Start != start || len(signed.Path) == 0 {
					t.Errorf("node %d, job %d: acceptance %+v: %v (refused %q)", i, j, st, err, resp.Refused[j])
				}
			}
		}
	}
	client := []byte(a.Identity().Key.Public().(ed25519.PublicKey))
	for j, k := range keys {
		for _, st := range cn.states(k) {
			claimed := st.Phase == job.Claimed && bytes.Equal(st.Client, client) && st.Start == start
			if want := j != wrongJob && j != forged; claimed != want {
				t.Errorf("job %d: replica state %+v, claimed by the client %v, want %v", j, st, claimed, want)
			}
		}
	}
	// The altered reply's signature does not verify: it proves nothing
	// against the node it names, whose genuine reply the client altered.
	victim := f.Net.Node(holders[1]).Identity().Cert.Subject.CommonName
	for _, i := range holders {
		if n := f.Net.Node(i).Claims().Forged()[victim]; n != 0 {
			t.Errorf("node %d counted %d forged replies against %q, whose reply the client altered", i, n, victim)
		}
	}
}

// alterUnderPath returns reply b with its statement's time moved by 1 ms
// and its batch path and signature kept: the path then leads to another
// root, which its node never signed.
func alterUnderPath(t *testing.T, b []byte) []byte {
	t.Helper()
	signed, st, err := claim.Decode(b)
	if err != nil || len(signed.Path) == 0 {
		t.Fatalf("reply to alter: %v (path %d bytes)", err, len(signed.Path))
	}
	st.At++
	if signed.Statement, err = st.Encode(); err != nil {
		t.Fatal(err)
	}
	out, err := signed.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
