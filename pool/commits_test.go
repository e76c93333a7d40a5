package pool_test

import (
	"crypto/ed25519"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/job"
	"github.com/up-pool/up/result"
	"github.com/up-pool/up/wire"
)

// commitPost is a client's commitment to a fresh commit–reveal job of the
// project (lifetime an hour), with the board key it names.
func (pn *poolNet) commitPost(t *testing.T, client ed25519.PrivateKey) (*wire.CommitPost, []byte) {
	t.Helper()
	spec, err := pn.proj.NewSpec("hashchain", []string{"1000", "board"}, []string{"lhc"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	spec.Commit, spec.Lifetime = 2, time.Hour.Milliseconds()
	spec.Version = spec.LeastVersion()
	signed, err := pn.proj.Sign(spec)
	if err != nil {
		t.Fatal(err)
	}
	cm := result.SignCommit(client, signed.Key(), spec.BoardKey(), []byte("output"))
	return &wire.CommitPost{Signed: signed.Encode(), Cert: pn.proj.Agent().Identity().Cert.Raw, Commit: cm.Encode()}, spec.BoardKey()
}

// TestBoardsExpire: a unit board nobody reads is deleted once its job has
// expired on the node's clock (the sweep in ExpireNow); before that it is
// kept (control).
func TestBoardsExpire(t *testing.T) {
	pn := startPoolNet(t, 6, 0, 31)
	_, client, _ := ed25519.GenerateKey(rand.NewChaCha8([32]byte{31}))
	post, board := pn.commitPost(t, client)
	nd := pn.net.Node(pn.net.Index(pn.net.TrueClosest(board, 1)[0]))
	if n, err := nd.Pool().PostCommit(client.Public().(ed25519.PublicKey), post); err != nil || n != 1 {
		t.Fatalf("post: %d, %v", n, err)
	}
	boards := func() int {
		n, err := nd.Pool().Boards()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	pn.clock.Advance(time.Hour) // the job's lifetime: not past its expiry margin yet
	nd.Pool().ExpireNow()
	if n := boards(); n != 1 {
		t.Fatalf("control: %d boards kept before the job expired, want 1", n)
	}
	pn.clock.Advance(time.Duration(job.ExpiryMarginMS)*time.Millisecond + time.Minute)
	nd.Pool().ExpireNow()
	if n := boards(); n != 0 {
		t.Fatalf("%d boards kept after the job expired, want 0", n)
	}
}

// TestBoardOnlyNearIt: a node far from a unit's board key refuses its
// commitments (moved), so a client cannot fill any node's store with
// boards; a node among the board's nearest keeps them (control).
func TestBoardOnlyNearIt(t *testing.T) {
	pn := startPoolNet(t, 16, 0, 32)
	_, client, _ := ed25519.GenerateKey(rand.NewChaCha8([32]byte{32}))
	post, board := pn.commitPost(t, client)
	order := pn.net.TrueClosest(board, 16)
	far := pn.net.Node(pn.net.Index(order[len(order)-1]))
	_, err := far.Pool().PostCommit(client.Public().(ed25519.PublicKey), post)
	if err == nil || !strings.Contains(err.Error(), "not among its") {
		t.Fatalf("the farthest node from board %s… took a commitment: %v", keyspace.KeyPos(board).String()[:8], err)
	}
	if n, _ := far.Pool().Boards(); n != 0 {
		t.Fatalf("the farthest node keeps %d boards", n)
	}
	near := pn.net.Node(pn.net.Index(order[0]))
	if n, err := near.Pool().PostCommit(client.Public().(ed25519.PublicKey), post); err != nil || n != 1 {
		t.Fatalf("control: the nearest node: %d, %v", n, err)
	}
}
