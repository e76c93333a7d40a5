package claimnet_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
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

// TestClaimerClaimMany: claimclient's ClaimMany wins the jobs of a batch
// with one request and one confirm per node, and its certificates — each
// a quorum of batch-signed acceptances — prove the claims to every
// replica, the one that did not accept included (each ends Claimed by
// the client). Three clients then race for a second batch, two claiming
// all its jobs at once and one job by job: every job has exactly one
// winner, recorded on every replica.
func TestClaimerClaimMany(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 92})
	keys := testnet.SubmitJobs(t, f.Project, 16, testnet.Jobs{Batch: true})
	first, second := keys[:8], keys[8:]
	cn := &claimNet{net: f.Net, clock: f.Clock, proj: f.Project, keys: keys}
	ctx := context.Background()
	a, cl := cn.client(t, "many")
	client := []byte(a.Identity().Key.Public().(ed25519.PublicKey))
	place := f.Net.PlaceOf(first[0])
	claims, errs := cl.ClaimMany(ctx, first, place, nil)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		if len(claims[i].Accepts) < claim.Quorum(a.DHT().Replication()) {
			t.Fatalf("job %d: %d acceptances", i, len(claims[i].Accepts))
		}
		if _, _, err := claim.Decode(claims[i].Accepts[0]); err != nil {
			t.Fatal(err)
		}
	}
	// One request and at most one confirm per node for the eight jobs.
	sent := func(proto string) int {
		return int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", proto))
	}
	// The shared versions, every node serving them.
	t.Logf("sent: many-claims %d, many-confirms %d", sent(wire.ProtoClaimManyShared), sent(wire.ProtoConfirmManyShared))
	if claims, confirms := sent(wire.ProtoClaimManyShared), sent(wire.ProtoConfirmManyShared); claims == 0 || claims > a.DHT().Replication() || confirms > a.DHT().Replication() ||
		sent(wire.ProtoClaim) != 0 || sent(wire.ProtoConfirm) != 0 || sent(wire.ProtoClaimMany) != 0 || sent(wire.ProtoConfirmMany) != 0 {
		t.Errorf("8 jobs claimed with %d shared many-claims, %d shared many-confirms, %d claims, %d confirms, %d unshared many-claims; want at most r of each shared many, none else",
			claims, confirms, sent(wire.ProtoClaim), sent(wire.ProtoConfirm), sent(wire.ProtoClaimMany))
	}
	for i, k := range first {
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("job %d claimed on every replica", i), func() bool {
			sts := cn.states(k)
			for _, st := range sts {
				if st.Phase != job.Claimed || !bytes.Equal(st.Client, client) {
					return false
				}
			}
			return len(sts) == a.DHT().Replication()
		})
	}

	var mu sync.Mutex
	winners := map[string][]string{}
	var wg sync.WaitGroup
	for c := range 3 {
		a, cl := cn.client(t, fmt.Sprintf("racer%d", c))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var errs []error
			if c < 2 {
				_, errs = cl.ClaimMany(ctx, second, f.Net.PlaceOf(second[0]), nil)
			} else {
				for _, k := range second {
					_, err := cl.ClaimAt(ctx, k, f.Net.PlaceOf(k), nil)
					errs = append(errs, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for i, err := range errs {
				if err == nil {
					winners[string(second[i])] = append(winners[string(second[i])], a.Identity().Name)
				}
			}
		}()
	}
	wg.Wait()
	for i, k := range second {
		if w := winners[string(k)]; len(w) > 1 {
			t.Errorf("job %d won by %v", i, w)
		}
	}
	if len(winners) == 0 {
		t.Error("no job of the raced batch was won")
	}
}

// TestClaimManyOlderNodes: two of a batch's replicas do not serve the
// shared many-job protocols (an older version: they answer "not found");
// a claimer still wins every job of the batch, asking those two the
// first way and the others the shared way. Control: without the older
// nodes no request goes the first way.
func TestClaimManyOlderNodes(t *testing.T) {
	for _, older := range []int{0, 2} {
		t.Run(fmt.Sprintf("%d older", older), func(t *testing.T) {
			f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 94})
			keys := testnet.SubmitJobs(t, f.Project, 8, testnet.Jobs{Batch: true})
			replicas := f.Net.Holders(keys[0])
			notFound := func(context.Context, *overlay.Admitted, []byte) (any, error) {
				return nil, overlay.StatusErr(wire.StatusNotFound, errors.New("no such protocol"))
			}
			for _, i := range replicas[:older] {
				ep := f.Net.Node(i).Endpoint()
				ep.Handle(wire.ProtoClaimManyShared, wire.MaxClaimManyBytes, nil, notFound)
				ep.Handle(wire.ProtoConfirmManyShared, wire.MaxClaimManyBytes, nil, notFound)
			}
			cn := &claimNet{net: f.Net, clock: f.Clock, proj: f.Project, keys: keys}
			a, cl := cn.client(t, "many")
			_, errs := cl.ClaimMany(context.Background(), keys, f.Net.PlaceOf(keys[0]), nil)
			for i, err := range errs {
				if err != nil {
					t.Fatalf("job %d: %v", i, err)
				}
			}
			sent := func(proto string) int {
				return int(overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "protocol", proto))
			}
			first, shared := sent(wire.ProtoClaimMany), sent(wire.ProtoClaimManyShared)
			t.Logf("many-claims: %d the first way, %d shared; many-confirms: %d the first way, %d shared",
				first, shared, sent(wire.ProtoConfirmMany), sent(wire.ProtoConfirmManyShared))
			if first != older || shared < len(replicas)-older || sent(wire.ProtoConfirmMany) > older {
				t.Fatalf("%d many-claims the first way and %d shared with %d older of %d replicas", first, shared, older, len(replicas))
			}
		})
	}
}

// TestSharedSignerForged: over the shared many-job protocols, a client
// gathers every replica's batch-signed grants for four jobs and sends one
// replica a shared confirm whose table names one other replica's
// signature altered: that one shared part fails every confirm that names
// it — all four refused for a bad signature, none claimed there — as four
// altered copies would. Control: the same confirm with the table as it
// came is accepted for all four.
func TestSharedSignerForged(t *testing.T) {
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 98})
	keys := testnet.SubmitJobs(t, f.Project, 4, testnet.Jobs{Batch: true})
	cn := &claimNet{net: f.Net, clock: f.Clock, proj: f.Project, keys: keys}
	a, _ := cn.client(t, "sharer")
	ctx := context.Background()
	holders := f.Net.Holders(keys[0])
	replies := make([][][]byte, len(keys))
	for _, i := range holders {
		shared, err := wire.ShareClaimManyRequest(&wire.ClaimManyRequest{Jobs: keys})
		if err != nil {
			t.Fatal(err)
		}
		var sresp wire.ClaimManySharedResponse
		if err := a.Endpoint().Call(ctx, f.Net.Node(i).ID(), wire.ProtoClaimManyShared, shared, wire.MaxClaimManyBytes, &sresp); err != nil {
			t.Fatal(err)
		}
		if len(sresp.Replies.Signers) != 1 {
			t.Fatalf("node %d: %d signers for its batch, want 1", i, len(sresp.Replies.Signers))
		}
		resp, err := sresp.Unshared()
		if err != nil {
			t.Fatal(err)
		}
		for j, b := range resp.Replies {
			replies[j] = append(replies[j], b)
		}
	}
	start := f.Clock.Now().UnixMilli()
	confirm := func(at int, forge bool) *wire.ConfirmManyResponse {
		items := make([]wire.ConfirmRequest, len(keys))
		for j := range keys {
			items[j] = wire.ConfirmRequest{Job: keys[j], Start: start, Replies: replies[j]}
		}
		shared, err := wire.ShareConfirmManyRequest(&wire.ConfirmManyRequest{Items: items})
		if err != nil {
			t.Fatal(err)
		}
		if forge { // the second replica's signature: not the confirming one's own
			sig := bytes.Clone(shared.Replies.Signers[1].PeerSig)
			sig[0] ^= 1
			shared.Replies.Signers[1].PeerSig = sig
		}
		var sresp wire.ConfirmManySharedResponse
		if err := a.Endpoint().Call(ctx, f.Net.Node(at).ID(), wire.ProtoConfirmManyShared, shared, wire.MaxClaimManyBytes, &sresp); err != nil {
			t.Fatal(err)
		}
		resp, err := sresp.Unshared()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	forgedAt, honestAt := holders[0], holders[2]
	resp := confirm(forgedAt, true)
	for j := range keys {
		if resp.Accepts[j] != nil || !strings.Contains(resp.Refused[j], claim.ErrBadSignature.Error()) {
			t.Errorf("job %d: confirm naming a forged shared signature: accepted %v, refused %q", j, resp.Accepts[j] != nil, resp.Refused[j])
		}
		if st, _ := f.Net.Node(forgedAt).Pool().State(keys[j]); st.Phase != job.Ready {
			t.Errorf("job %d: %s at the replica that refused", j, st.Phase)
		}
	}
	resp = confirm(honestAt, false)
	for j := range keys {
		if _, st, err := claim.Decode(resp.Accepts[j]); err != nil || st.Kind != claim.Accepted {
			t.Errorf("job %d: the unaltered shared confirm: %v (refused %q)", j, err, resp.Refused[j])
		}
	}
}
