package claimnet_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// syncState has node from send node to one state of key, with proof, by
// job/sync (as the job's closest republishes it).
func (cn *claimNet) syncState(t *testing.T, from, to int, key []byte, st job.State, proof []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := &wire.SyncRequest{Items: []wire.SyncItem{{Key: key, State: st, Proof: proof}}}
	var resp wire.SyncResponse
	if err := cn.net.Node(from).Endpoint().Call(ctx, cn.net.Node(to).ID(), wire.ProtoJobSync, req, wire.MaxJobFrame, &resp); err != nil {
		t.Fatal(err)
	}
}

// held returns the unexpired state node i keeps of key.
func (cn *claimNet) held(t *testing.T, i int, key []byte) job.State {
	t.Helper()
	env, err := cn.net.Node(i).Pool().Envelope(key)
	if err != nil {
		t.Fatal(err)
	}
	return env.State
}

// submit seals and submits the winner's result of a claim.
func (cn *claimNet) submitWinner(t *testing.T, who *claimParty) {
	t.Helper()
	id := who.a.Identity()
	env, err := result.Seal(result.Inner{Job: who.cl.Job, ClientCert: id.Cert.Raw, Output: []byte("42\n"), At: cn.clock.Now().UnixMilli()},
		id.Key, cn.proj.Agent().Identity().ResultPublicKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := who.c.SubmitResult(context.Background(), who.cl, env.Encode()); err != nil {
		t.Fatalf("the winner's result was refused: %v", err)
	}
}

// winClaim has a new client win key honestly.
func (cn *claimNet) winClaim(t *testing.T, name string, key []byte) *claimParty {
	t.Helper()
	a, c := cn.client(t, name)
	c.SetSigner(a.Identity().Key)
	cl, err := c.Claim(context.Background(), key)
	if err == nil {
		err = cl.Certified(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	return &claimParty{a: a, c: c, cl: cl}
}

// TestForgedClaimStateRefused: a client wins a job honestly; one of the
// job's replicas, helping an accomplice client, syncs the other replicas
// a claim of the accomplice with a later start (it beats the winner's in
// the merge), and a tombstone of such a claim: without proof, and with
// the winner's certificate. Every other replica keeps the winner's claim,
// keeps the forgeries as evidence against the liar, and the winner's
// result is accepted.
func TestForgedClaimStateRefused(t *testing.T) {
	cn := startClaimNet(t, 7, 1, 173)
	key := cn.keys[0]
	hs := cn.net.Holders(key)
	w := cn.winClaim(t, "winner", key)
	liar, honest := hs[0], hs[1:]
	acc, _ := cn.client(t, "accomplice")
	akey := []byte(acc.Identity().Key.Public().(ed25519.PublicKey))
	h, _ := cn.net.Node(honest[0]).Pool().Lookup(key)
	start := w.cl.Start + 1000
	winnerProof := cn.net.Node(honest[0]).Pool().Proof(key)
	forged := []struct {
		name  string
		st    job.State
		proof []byte
	}{
		{"later claim without proof", job.State{Phase: job.Claimed, Client: akey, Start: start, Deadline: start + h.TFinish}, nil},
		{"later claim with the winner's certificate", job.State{Phase: job.Claimed, Client: akey, Start: start, Deadline: start + h.TFinish}, winnerProof},
		{"tombstone of a later claim", job.State{Phase: job.Ready, Client: akey, Start: start}, nil},
	}
	for _, f := range forged {
		for _, i := range honest {
			cn.syncState(t, liar, i, key, f.st, f.proof)
		}
	}
	wkey := w.a.Identity().Key.Public().(ed25519.PublicKey)
	liarName := cn.net.Node(liar).Identity().Name
	for _, i := range honest {
		if st := cn.held(t, i, key); st.Phase != job.Claimed || !bytes.Equal(st.Client, wkey) || st.Start != w.cl.Start {
			t.Fatalf("replica %d holds %+v, want the winner's claim", i, st)
		}
		n := 0
		for _, ev := range cn.net.Node(i).Pool().Evidence() {
			if ev.Sender == liarName {
				n++
			}
		}
		if n != len(forged) {
			t.Errorf("replica %d kept %d forgeries by %q as evidence, want %d", i, n, liarName, len(forged))
		}
	}
	cn.submitWinner(t, w)
}

// TestForgedReleaseRefused: one replica syncs the others a release of a
// live claim its client never gave back (the claim's deadline moved
// early): without the client's signature, and with a signature by another
// client's key under that client's certificate. The claim stands on every
// other replica, and the winner's result is accepted.
func TestForgedReleaseRefused(t *testing.T) {
	cn := startClaimNet(t, 7, 1, 174)
	key := cn.keys[0]
	hs := cn.net.Holders(key)
	w := cn.winClaim(t, "winner", key)
	liar, honest := hs[0], hs[1:]
	wkey := w.a.Identity().Key.Public().(ed25519.PublicKey)
	rel := job.State{Phase: job.Claimed, Client: wkey, Start: w.cl.Start, Deadline: w.cl.Start + 1}
	held, err := job.DecodeProof(cn.net.Node(honest[0]).Pool().Proof(key))
	if err != nil || len(held.Claim) == 0 {
		t.Errorf("replica %d holds the claim without its certificate (%v)", honest[0], err)
	}
	other, _ := cn.client(t, "other")
	badSig := ed25519.Sign(other.Identity().Key, []byte("release"))
	for _, proof := range []*job.Proof{
		{Claim: held.Claim},
		{Claim: held.Claim, Sig: badSig, Cert: other.Identity().Cert.Raw},
		{Claim: held.Claim, Sig: badSig, Cert: w.a.Identity().Cert.Raw},
	} {
		for _, i := range honest {
			cn.syncState(t, liar, i, key, rel, proof.Encode())
		}
	}
	for _, i := range honest {
		if st := cn.held(t, i, key); st.Phase != job.Claimed || st.Deadline != w.cl.Start+cn.tFinish(t, key) {
			t.Fatalf("replica %d holds %+v after forged releases, want the live claim", i, st)
		}
		if n := len(cn.net.Node(i).Pool().Evidence()); n != 3 {
			t.Errorf("replica %d kept %d forged releases as evidence, want 3", i, n)
		}
	}
	cn.submitWinner(t, w)
}

// TestSignedReleaseSyncs: a client releases its claim with its signature;
// a replica that missed the release learns it by sync, with the proof.
func TestSignedReleaseSyncs(t *testing.T) {
	cn := startClaimNet(t, 7, 1, 175)
	key := cn.keys[0]
	hs := cn.net.Holders(key)
	deaf := hs[len(hs)-1]
	w := cn.winClaim(t, "winner", key)
	deafen(cn.net.Node(deaf), wire.ProtoRelease)
	w.c.Release(context.Background(), w.cl, wire.SkipUnknown)
	for _, i := range hs {
		if i != deaf {
			cn.net.Node(i).Pool().RepublishRound(context.Background())
		}
	}
	for _, i := range hs {
		if st, _ := cn.net.Node(i).Pool().State(key); st.Phase != job.Ready {
			t.Errorf("replica %d (deaf %v) holds %+v after the release, want ready", i, i == deaf, st)
		}
		if ev := cn.net.Node(i).Pool().Evidence(); len(ev) > 0 {
			t.Errorf("replica %d refused an honest release: %+v", i, ev)
		}
	}
}

// TestClaimLearnedBySync: a replica that missed a won claim's confirm and
// certificate (it refused both) learns the claim by sync, with its
// certificate, and refuses no honest state.
func TestClaimLearnedBySync(t *testing.T) {
	cn := startClaimNet(t, 7, 1, 176)
	key := cn.keys[0]
	hs := cn.net.Holders(key)
	deaf := hs[len(hs)-1]
	deafen(cn.net.Node(deaf), wire.ProtoConfirm, wire.ProtoCertify)
	w := cn.winClaim(t, "winner", key)
	if st := cn.held(t, deaf, key); st.Phase != job.Ready {
		t.Fatalf("the deaf replica holds %+v before any sync", st)
	}
	for _, i := range hs {
		if i != deaf {
			cn.net.Node(i).Pool().RepublishRound(context.Background())
		}
	}
	wkey := w.a.Identity().Key.Public().(ed25519.PublicKey)
	for _, i := range hs {
		st := cn.held(t, i, key)
		if st.Phase != job.Claimed || !bytes.Equal(st.Client, wkey) || st.Start != w.cl.Start {
			t.Fatalf("replica %d (deaf %v) holds %+v, want the winner's claim", i, i == deaf, st)
		}
		if len(cn.net.Node(i).Pool().Proof(key)) == 0 {
			t.Errorf("replica %d (deaf %v) holds the claim without its certificate", i, i == deaf)
		}
		if ev := cn.net.Node(i).Pool().Evidence(); len(ev) > 0 {
			t.Errorf("replica %d refused an honest state: %+v", i, ev)
		}
	}
	cn.submitWinner(t, w)
}

// claimParty is a client and the claim it won.
type claimParty struct {
	a  *agent.Agent
	c  *claimclient.Claimer
	cl *claimclient.Claim
}

var errDeaf = errors.New("this replica takes no part")

// deafen makes node nd refuse clients' requests of the given claim
// protocols (errDeaf): a replica that takes no part in them.
func deafen(nd *node.Node, protos ...string) {
	refuse := func(context.Context, *overlay.Admitted, []byte) (any, error) {
		return nil, overlay.StatusErr(wire.StatusInternal, errDeaf)
	}
	for _, proto := range protos {
		nd.Endpoint().Handle(protocol.ID(proto), 1<<20, []certs.Role{certs.RoleClient}, refuse)
	}
}

// tFinish is the job's T_finish in ms.
func (cn *claimNet) tFinish(t *testing.T, key []byte) int64 {
	t.Helper()
	h, ok := cn.net.Node(cn.net.Holders(key)[0]).Pool().Lookup(key)
	if !ok {
		t.Fatal("job not held")
	}
	return h.TFinish
}
