package claimnet

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/up-pool/up/sigverify"
)

// TestBatchVerify: a batch of valid signatures passes; one bad signature,
// a signature by another key or over another message is found, by index,
// wherever it sits in the batch; an invalid public key fails its entry.
func TestBatchVerify(t *testing.T) {
	type item struct {
		pub       ed25519.PublicKey
		msg, sig  []byte
		otherPriv ed25519.PrivateKey
	}
	items := make([]item, 5)
	for i := range items {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		msg := []byte(fmt.Sprintf("reply %d", i))
		items[i] = item{pub: pub, msg: msg, sig: ed25519.Sign(priv, msg), otherPriv: other}
	}
	run := func(mutate func(i int, it item) item) int {
		b := newBatch(len(items))
		for i, it := range items {
			it = mutate(i, it)
			b.add(i, it.pub, it.msg, it.sig)
		}
		return b.verify()
	}
	if bad := run(func(_ int, it item) item { return it }); bad != -1 {
		t.Fatalf("valid batch: entry %d reported bad", bad)
	}
	for at := range items {
		cases := map[string]func(it item) item{
			"flipped bit": func(it item) item {
				sig := append([]byte(nil), it.sig...)
				sig[7] ^= 1
				it.sig = sig
				return it
			},
			"other key":     func(it item) item { it.sig = ed25519.Sign(it.otherPriv, it.msg); return it },
			"other message": func(it item) item { it.msg = []byte("forged"); return it },
			"bad key":       func(it item) item { it.pub = make(ed25519.PublicKey, ed25519.PublicKeySize-1); return it },
		}
		for name, m := range cases {
			if bad := run(func(i int, it item) item {
				if i == at {
					return m(it)
				}
				return it
			}); bad != at {
				t.Errorf("%s at %d: verify reports %d", name, at, bad)
			}
		}
	}
	if got := (&batch{}).verify(); got != -1 {
		t.Errorf("empty batch: %d", got)
	}
}

// TestBatchQueuesARootOnce: the replies of one node's batch carry the
// same signature over the same root; the batch queues it once, and a bad
// one is reported by the first reply that carried it.
func TestBatchQueuesARootOnce(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	root := []byte("batch root")
	sig := ed25519.Sign(priv, root)
	b := newBatch(4)
	for i := range 4 {
		b.add(i, pub, root, sig)
	}
	if len(b.sigs) != 1 || b.verify() != -1 {
		t.Fatalf("%d signatures queued for one root (want 1); verify %d", len(b.sigs), b.verify())
	}
	bad := append([]byte(nil), sig...)
	bad[3] ^= 1
	b = newBatch(4)
	b.add(0, pub, []byte("other"), ed25519.Sign(priv, []byte("other")))
	for i := 1; i < 4; i++ {
		b.add(i, pub, root, bad)
	}
	if got := b.verify(); got != 1 {
		t.Fatalf("bad root signature reported at %d, want 1 (its first reply)", got)
	}
}

// TestBatchRemembersAcrossBatches: with a cache of signatures verified
// here (batch.known, a proof checker's), a root's signature verified in
// one batch is not queued in the next (the certificates of jobs claimed
// together carry the same acceptors' roots); a batch that fails leaves
// nothing remembered, and an altered signature of a remembered root is
// still queued and refused (the cache is by key, message and signature).
func TestBatchRemembersAcrossBatches(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	root, other := []byte("batch root"), []byte("other root")
	sig, otherSig := ed25519.Sign(priv, root), ed25519.Sign(priv, other)
	known := sigverify.NewOnce(16)
	first := newBatch(1)
	first.known = known
	first.add(0, pub, root, sig)
	if first.verify() != -1 {
		t.Fatal("a valid root refused")
	}
	second := newBatch(2)
	second.known = known
	second.add(0, pub, root, sig)
	if len(second.sigs) != 0 {
		t.Fatalf("%d signatures queued for a root verified before, want 0", len(second.sigs))
	}
	bad := append([]byte(nil), sig...)
	bad[5] ^= 1
	second.add(1, pub, root, bad)
	second.add(2, pub, other, otherSig)
	if len(second.sigs) != 2 || second.verify() != 1 {
		t.Fatalf("%d queued, verify %d; want the altered signature and the other root queued, the altered one refused", len(second.sigs), second.verify())
	}
	if known.Known(pub, other, otherSig) {
		t.Fatal("a signature of a batch that failed was remembered")
	}
	// Control: without the cache the root is queued again.
	third := newBatch(1)
	third.add(0, pub, root, sig)
	if len(third.sigs) != 1 {
		t.Fatal("control: a batch without a cache skipped a signature")
	}
}
