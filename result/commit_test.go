package result

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/nacl/box"

	"github.com/up-pool/up/codec"
)

func commitKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

// TestCheckReveal: a reveal passes only against its own client's one
// commitment for that job and the output it committed to; another's
// output, another's salt, a second commitment or none are refused.
func TestCheckReveal(t *testing.T) {
	job, board := []byte("job-1"), bytes.Repeat([]byte{7}, 32)
	a, b := commitKey(1), commitKey(2)
	pubA, pubB := a.Public().(ed25519.PublicKey), b.Public().(ed25519.PublicKey)
	outA, outB := []byte("the answer"), []byte("a lazy guess")
	ca, cb := SignCommit(a, job, board, outA), SignCommit(b, job, board, outB)
	for _, c := range []*Commit{ca, cb} {
		got, err := DecodeCommit(c.Encode())
		if err != nil || got.Verify() != nil {
			t.Fatalf("decode/verify: %v", err)
		}
	}
	all := []*Commit{ca, cb}
	if err := CheckReveal(all, job, pubA, outA, CommitSalt(a, job)); err != nil {
		t.Fatalf("honest reveal refused: %v", err)
	}
	// B committed to its own output, learnt A's and reveals it.
	if err := CheckReveal(all, job, pubB, outA, CommitSalt(b, job)); !errors.Is(err, ErrRevealMismatch) {
		t.Fatalf("B revealing A's output: %v, want a mismatch", err)
	}
	if err := CheckReveal(all, job, pubB, outA, CommitSalt(a, job)); !errors.Is(err, ErrRevealMismatch) {
		t.Fatalf("B revealing A's output and salt: %v, want a mismatch", err)
	}
	// A's commitment cannot stand for B: it names A's key.
	if err := CheckReveal([]*Commit{ca}, job, pubB, outA, CommitSalt(a, job)); !errors.Is(err, ErrNoCommit) {
		t.Fatalf("B with only A's commitment: %v, want none", err)
	}
	second := SignCommit(b, job, board, outA)
	if err := CheckReveal(append(all, second), job, pubB, outA, CommitSalt(b, job)); !errors.Is(err, ErrEquivocation) {
		t.Fatalf("two commitments: %v, want equivocation", err)
	}
	forged := *ca
	forged.C = cb.C
	if forged.Verify() == nil {
		t.Fatal("altered commitment verified")
	}
}

// TestRevealNow: f+1 nodes must vouch for the quorum, or the wait ends.
func TestRevealNow(t *testing.T) {
	cases := []struct {
		counts []int
		waited time.Duration
		want   bool
	}{
		{[]int{2, 1, 1, 1, 1}, 0, false}, // one node's word
		{[]int{2, 2, 1, 0}, 0, true},
		{[]int{1, 1, 1, 1, 1}, time.Minute, false},
		{nil, 10 * time.Minute, true},
	}
	for _, c := range cases {
		if got := RevealNow(c.counts, 2, 1, c.waited.Milliseconds(), (10 * time.Minute).Milliseconds()); got != c.want {
			t.Errorf("RevealNow(%v, waited %v) = %v", c.counts, c.waited, got)
		}
	}
}

// TestInnerLayouts: a record without a salt keeps the nine-field bytes;
// one with a salt seals, opens and keeps it.
func TestInnerLayouts(t *testing.T) {
	key := commitKey(3)
	in := Inner{Job: []byte("j"), ClientCert: []byte("cert"), Output: []byte("out"), At: 5}
	b, err := codec.Marshal(&in)
	if err != nil || b[0] != innerV1Header {
		t.Fatalf("no salt: %x %v", b[:1], err)
	}
	in.Salt = CommitSalt(key, in.Job)
	b, err = codec.Marshal(&in)
	if err != nil || b[0] != innerV2Header {
		t.Fatalf("salt: %x %v", b[:1], err)
	}
	var back Inner
	if err := codec.Unmarshal(b, &back); err != nil || !bytes.Equal(back.Salt, in.Salt) {
		t.Fatalf("round trip: %v", err)
	}
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	env, err := Seal(in, key, pub[:], nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(env, priv, func([]byte) (ed25519.PublicKey, error) { return key.Public().(ed25519.PublicKey), nil })
	if err != nil || !bytes.Equal(got.Salt, in.Salt) {
		t.Fatalf("open: %v", err)
	}
	in.Salt = []byte("short")
	b, _ = codec.Marshal(&in)
	if err := codec.Unmarshal(b, &back); err == nil {
		t.Fatal("a short salt decoded")
	}
}
