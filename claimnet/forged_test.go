package claimnet_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// forger holds one node's certificate and keys (a volunteer who runs one
// node) and makes claim replies in the name of other nodes with them.
type forger struct {
	id *keystore.Identity
}

// grant forges a grant of key to client in the name of node: signed with
// the forger's own account and peer keys, its position record either its
// own (naming its node) or a new one naming the victim (an account key can
// sign a record naming any peer).
func (f forger) grant(t *testing.T, key, client []byte, node peer.ID, at int64, ownRecord bool) []byte {
	t.Helper()
	rec := f.id.Position.Marshal()
	if !ownRecord {
		rec = certs.SignPosition(f.id.Key, certs.Position{PeerID: []byte(node), Seq: f.id.Position.Position.Seq + 1,
			IssuedAt: time.UnixMilli(at)}).Marshal()
	}
	b, err := claim.Sign(claim.Statement{Kind: claim.Granted, Job: key, Client: client, Node: []byte(node), At: at},
		f.id.Cert.Raw, rec, f.id.PeerKey.Sign)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForgedGrantsRefused: a client holding one node's certificate gets a
// genuine grant from one replica and forges the other four replies with
// that certificate (with its own position record, or one naming the
// victim). Every replica refuses the confirm, the job stays ready, and each
// replica counts the forgery against the certificate that provably made
// it: with its own position record, its node's peer key signed a
// statement naming another node; with a record naming the victim, the
// peer signature is not the victim's and nothing binds it to the forger
// (anyone can attach a public certificate and record to a bad signature),
// so only the confirm's client is logged.
func TestForgedGrantsRefused(t *testing.T) {
	cn := startClaimNet(t, 7, 1, 71)
	ctx := context.Background()
	key := cn.keys[0]
	hs := cn.net.Holders(key)
	if len(hs) < 5 {
		t.Fatalf("%d replicas", len(hs))
	}
	var outsider int // a node that does not hold the job: the forger's own
	for i := range 7 {
		if !contains(hs, i) {
			outsider = i
		}
	}
	f := forger{id: cn.net.Node(outsider).Identity()}
	signer := f.id.Cert.Subject.CommonName
	for _, ownRecord := range []bool{true, false} {
		a, _ := cn.client(t, fmt.Sprintf("thief-%v", ownRecord))
		client := []byte(a.Identity().Key.Public().(ed25519.PublicKey))
		for _, victim := range hs[:5] {
			// A genuine grant from the victim (its temporary claim holds
			// for the thief), the four others forged.
			var resp wire.ClaimResponse
			if err := a.Endpoint().Call(ctx, cn.net.Node(victim).ID(), wire.ProtoClaim, &wire.ClaimRequest{Job: key}, wire.MaxReplyBytes+64, &resp); err != nil {
				t.Fatal(err)
			}
			replies := [][]byte{resp.Reply}
			for _, other := range hs[:5] {
				if other != victim {
					replies = append(replies, f.grant(t, key, client, cn.net.Node(other).ID(), cn.clock.Now().UnixMilli(), ownRecord))
				}
			}
			req := &wire.ConfirmRequest{Job: key, Start: cn.clock.Now().UnixMilli(), Replies: replies}
			var ok wire.Ping
			if err := a.Endpoint().Call(ctx, cn.net.Node(victim).ID(), wire.ProtoConfirm, req, 1024, &ok); err == nil {
				t.Fatalf("own record %v: replica %d accepted a confirm with forged grants", ownRecord, victim)
			}
			if err := a.Endpoint().Call(ctx, cn.net.Node(victim).ID(), wire.ProtoRelease, &wire.ReleaseRequest{Job: key}, 1024, &ok); err != nil {
				t.Fatal(err)
			}
		}
		for _, st := range cn.states(key) {
			if st.Phase != job.Ready {
				t.Fatalf("own record %v: replica state %+v after forged confirms", ownRecord, st)
			}
		}
	}
	for _, i := range hs[:5] {
		if n := cn.net.Node(i).Claims().Forged()[signer]; n != 1 {
			t.Errorf("replica %d counted %d forged replies by %q, want 1 (the first of the own-record confirm): %v", i, n, signer, cn.net.Node(i).Claims().Forged())
		}
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestForgedGrantsCannotStealClaim: a client wins a job honestly; a thief
// holding one node certificate forges every replica's grant for itself,
// with a later start (a later claim beats an earlier one in the merge),
// and confirms at every replica. All refuse, the winner keeps the claim on
// every replica and its result is accepted.
func TestForgedGrantsCannotStealClaim(t *testing.T) {
	cn := startClaimNet(t, 7, 1, 72)
	ctx := context.Background()
	key := cn.keys[0]
	hs := cn.net.Holders(key)
	winner, wcl := cn.client(t, "winner")
	c, err := wcl.Claim(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var outsider int
	for i := range 7 {
		if !contains(hs, i) {
			outsider = i
		}
	}
	f := forger{id: cn.net.Node(outsider).Identity()}
	thief, _ := cn.client(t, "thief")
	tkey := []byte(thief.Identity().Key.Public().(ed25519.PublicKey))
	cn.clock.Advance(time.Second)
	for _, ownRecord := range []bool{true, false} {
		var replies [][]byte
		for _, i := range hs {
			replies = append(replies, f.grant(t, key, tkey, cn.net.Node(i).ID(), cn.clock.Now().UnixMilli(), ownRecord))
		}
		for _, i := range hs {
			req := &wire.ConfirmRequest{Job: key, Start: cn.clock.Now().UnixMilli(), Replies: replies}
			var ok wire.Ping
			if err := thief.Endpoint().Call(ctx, cn.net.Node(i).ID(), wire.ProtoConfirm, req, 1024, &ok); err == nil {
				t.Fatalf("replica %d accepted the thief's forged confirm", i)
			}
		}
	}
	wkey := winner.Identity().Key.Public().(ed25519.PublicKey)
	for _, st := range cn.states(key) {
		if st.Phase != job.Claimed || string(st.Client) != string(wkey) {
			t.Fatalf("replica state %+v, want the winner's claim", st)
		}
	}
	env, err := result.Seal(result.Inner{Job: c.Job, ClientCert: winner.Identity().Cert.Raw, Output: []byte("42\n"), At: cn.clock.Now().UnixMilli()},
		winner.Identity().Key, cn.proj.Agent().Identity().ResultPublicKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wcl.SubmitResult(ctx, c, env.Encode()); err != nil {
		t.Fatalf("the winner's result was refused: %v", err)
	}
}
