package claim

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"

	"github.com/up-pool/up/codec"
)

// batchStatements are n statements of one node for n jobs.
func batchStatements(n int) []Statement {
	sts := make([]Statement, n)
	for i := range sts {
		sts[i] = testStatement()
		sts[i].Job = []byte(fmt.Sprintf("job-%03d", i))
		sts[i].Kind = []Kind{Granted, Denied, DontCare}[i%3]
	}
	return sts
}

func signBatch(t testing.TB, sts []Statement, key ed25519.PrivateKey) [][]byte {
	t.Helper()
	out, err := SignBatch(sts, []byte("cert"), []byte("position"), func(m []byte) ([]byte, error) { return ed25519.Sign(key, m), nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSignBatchVerifies: every reply of a batch decodes to its own
// statement and verifies under the node's key; all share one signed
// message (the root's), so a verifier checks the signature once; another
// key fails each. One statement is signed alone, exactly as Sign does.
func TestSignBatchVerifies(t *testing.T) {
	key := nodeKey(1)
	pub := key.Public().(ed25519.PublicKey)
	for _, n := range []int{2, 3, 5, 16, 17, MaxReplyBatch} {
		sts := batchStatements(n)
		replies := signBatch(t, sts, key)
		var root []byte
		for i, b := range replies {
			signed, st, err := Decode(b)
			if err != nil {
				t.Fatalf("n=%d reply %d: %v", n, i, err)
			}
			if !sameStatement(st, &sts[i]) || len(signed.Path) == 0 {
				t.Fatalf("n=%d reply %d: %+v (path %d bytes), want %+v with a path", n, i, st, len(signed.Path), sts[i])
			}
			if err := signed.Verify(pub); err != nil {
				t.Fatalf("n=%d reply %d: %v", n, i, err)
			}
			if err := signed.Verify(nodeKey(2).Public().(ed25519.PublicKey)); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("n=%d reply %d under another key: %v", n, i, err)
			}
			msg, err := signed.Message()
			if err != nil {
				t.Fatal(err)
			}
			if root == nil {
				root = msg
			} else if !bytes.Equal(msg, root) {
				t.Fatalf("n=%d reply %d signs another message than reply 0", n, i)
			}
		}
	}
	one := signBatch(t, batchStatements(1), key)
	if want := mustSignReply(t, batchStatements(1)[0], []byte("cert"), key); len(one) != 1 || !bytes.Equal(one[0], want) {
		t.Fatal("a batch of one is not signed as Sign signs it")
	}
}

// TestSignBatchRefuses: a statement moved onto another's path, a
// statement altered under its path, a truncated or foreign path, a
// single reply's signature passed off as a batch root's (domains apart)
// and a batch root's as a single reply's all fail; a batch of two nodes'
// statements or more than MaxReplyBatch is not signed.
func TestSignBatchRefuses(t *testing.T) {
	key := nodeKey(1)
	pub := key.Public().(ed25519.PublicKey)
	sts := batchStatements(4)
	replies := signBatch(t, sts, key)
	decode := func(b []byte) *Signed {
		s, _, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s0, s1 := decode(replies[0]), decode(replies[1])
	altered := sts[0]
	altered.Kind = Denied // was Granted
	alteredStmt, _ := altered.Encode()
	otherBatch := decode(signBatch(t, batchStatements(6), key)[5])
	single := decode(mustSignReply(t, sts[0], []byte("cert"), key))
	cases := map[string]Signed{
		"statement on another's path": {Statement: s1.Statement, Cert: s0.Cert, Position: s0.Position, PeerSig: s0.PeerSig, Path: s0.Path},
		"statement altered":           {Statement: alteredStmt, Cert: s0.Cert, Position: s0.Position, PeerSig: s0.PeerSig, Path: s0.Path},
		"another batch's path":        {Statement: s0.Statement, Cert: s0.Cert, Position: s0.Position, PeerSig: s0.PeerSig, Path: otherBatch.Path},
		"single signature as a root":  {Statement: s0.Statement, Cert: s0.Cert, Position: s0.Position, PeerSig: single.PeerSig, Path: s0.Path},
		"root signature alone":        {Statement: s0.Statement, Cert: s0.Cert, Position: s0.Position, PeerSig: s0.PeerSig},
	}
	for name, s := range cases {
		b, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		signed, _, err := Decode(b)
		if err == nil {
			err = signed.Verify(pub)
		}
		if err == nil {
			t.Errorf("%s: verifies", name)
		}
	}
	var path struct {
		_      struct{} `cbor:",toarray"`
		Index  uint64
		Size   uint64
		Hashes [][]byte
	}
	if err := codec.Unmarshal(s0.Path, &path); err != nil {
		t.Fatal(err)
	}
	path.Hashes = path.Hashes[:len(path.Hashes)-1]
	short, _ := codec.Marshal(&path)
	cut := *s0
	cut.Path = short
	if err := cut.Verify(pub); err == nil {
		t.Error("a truncated path verifies")
	}
	mixed := batchStatements(3)
	mixed[2].Node = []byte("another-peer")
	if _, err := SignBatch(mixed, []byte("cert"), []byte("position"), func(m []byte) ([]byte, error) { return ed25519.Sign(key, m), nil }); err == nil {
		t.Error("a batch of two nodes' statements is signed")
	}
	if _, err := SignBatch(batchStatements(MaxReplyBatch+1), []byte("cert"), []byte("position"), func(m []byte) ([]byte, error) { return ed25519.Sign(key, m), nil }); err == nil {
		t.Errorf("a batch of %d statements is signed", MaxReplyBatch+1)
	}
}

// TestSignedLayouts: a reply signed alone encodes as before batches (four
// elements, byte for byte); the batch layout needs its path (a fifth
// element that is empty is refused, one encoding each) and bounds it.
func TestSignedLayouts(t *testing.T) {
	key := nodeKey(1)
	b := mustSignReply(t, testStatement(), []byte("cert"), key)
	s, _, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	old, err := codec.Marshal(&signedV1{Statement: s.Statement, Cert: s.Cert, Position: s.Position, PeerSig: s.PeerSig})
	if err != nil || !bytes.Equal(old, b) {
		t.Fatalf("a reply signed alone encodes apart from the four-element layout: %v", err)
	}
	emptyPath, err := codec.Marshal(s) // five elements, the last empty
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Decode(emptyPath); !errors.Is(err, ErrMalformed) {
		t.Fatalf("batch layout without a path: %v, want ErrMalformed", err)
	}
	long := *s
	long.Path = make([]byte, maxPathLen+1)
	lb, err := long.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Decode(lb); !errors.Is(err, ErrMalformed) {
		t.Fatalf("path of %d bytes: %v, want ErrMalformed", maxPathLen+1, err)
	}
	garbage := *s
	garbage.Path = []byte{0x01}
	if err := garbage.Verify(key.Public().(ed25519.PublicKey)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("undecodable path: %v, want ErrMalformed", err)
	}
}

// BenchmarkVerifyBatchReplies: a node's batch of 16 replies, verified as
// a confirming node does with the root's signature checked once, against
// 16 replies signed alone.
func BenchmarkVerifyBatchReplies(b *testing.B) {
	key := nodeKey(1)
	pub := key.Public().(ed25519.PublicKey)
	sts := batchStatements(16)
	batch := signBatch(b, sts, key)
	var alone [][]byte
	for _, st := range sts {
		alone = append(alone, mustSignReply(b, st, []byte("cert"), key))
	}
	for _, c := range []struct {
		name    string
		replies [][]byte
	}{{"batch16", batch}, {"alone16", alone}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				seen := map[string]bool{}
				for _, r := range c.replies {
					s, _, err := Decode(r)
					if err != nil {
						b.Fatal(err)
					}
					msg, err := s.Message()
					if err != nil {
						b.Fatal(err)
					}
					if k := string(msg) + string(s.PeerSig); !seen[k] {
						seen[k] = true
						if err := s.Verify(pub); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}
