package grind

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
)

// seeded returns a deterministic reader.
func seeded(n byte) io.Reader { return rand.NewChaCha8([32]byte{n, 'g', 'r', 'i', 'n', 'd'}) }

// nowhere is a region no candidate will hit.
var nowhere = keyspace.NewRegion(keyspace.Pos{1, 2, 3}, keyspace.Bits)

// randomRegion returns a region of the given bits with a random prefix.
func randomRegion(rng *rand.Rand, bits int) keyspace.Region {
	return keyspace.NewRegion(keyspace.NewRegion(keyspace.Pos{}, 0).RandomPoint(rng), bits)
}

// checkBatch runs one batch of w against nowhere and checks every candidate's
// peer ID bytes against go-libp2p's peer ID of the key k+off.
func checkBatch(t *testing.T, w *worker) {
	t.Helper()
	k := w.k
	seen := map[cand]bool{}
	w.see = func(id []byte, c cand) {
		s := c.scalar(&k)
		b := s.Bytes()
		key, err := crypto.UnmarshalSecp256k1PrivateKey(b[:])
		if err != nil {
			t.Fatal(err)
		}
		want, err := peer.IDFromPublicKey(key.GetPublic())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(id, []byte(want)) {
			t.Fatalf("%+v: peer ID bytes\n got %x\nwant %x", c, id, []byte(want))
		}
		seen[c] = true
	}
	defer func() { w.see = nil }()
	tries, hit, err := w.batch(&nowhere)
	if err != nil || hit {
		t.Fatalf("batch: hit %v err %v", hit, err)
	}
	if want := 6 * (2*w.t.n + 1); int(tries) != want || len(seen) != want {
		t.Fatalf("batch tried %d candidates (%d distinct offsets), want %d", tries, len(seen), want)
	}
	var next secp256k1.ModNScalar
	next.Add2(&k, &w.t.step)
	if !w.k.Equals(&next) {
		t.Fatalf("k after batch = %v, want %v", w.k, next)
	}
}

func TestPeerIDBytesMatchLibp2p(t *testing.T) {
	tab := tableFor(8)
	r := seeded(1)
	for range 100 {
		w := newWorker(tab, r)
		if err := w.reseed(); err != nil {
			t.Fatal(err)
		}
		checkBatch(t, w) // k, k±1..8
		checkBatch(t, w) // after the step to k+17
	}
	// And once with the default batch size.
	w := newWorker(tableFor(0), r)
	if err := w.reseed(); err != nil {
		t.Fatal(err)
	}
	checkBatch(t, w)
	checkBatch(t, w)
}

func TestEndomorphism(t *testing.T) {
	// λ·G = (β·Gx, Gy), and both are non-trivial cube roots of unity.
	var g, lg secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(&endoLambda[0], &g)
	secp256k1.ScalarBaseMultNonConst(&endoLambda[1], &lg)
	g.ToAffine()
	lg.ToAffine()
	var bx secp256k1.FieldVal
	bx.Mul2(&g.X, &endoBeta[1]).Normalize()
	if !bx.Equals(&lg.X) || !g.Y.Equals(&lg.Y) {
		t.Fatal("λ·G != (β·Gx, Gy)")
	}
	var l3 secp256k1.ModNScalar
	l3.Mul2(&endoLambda[2], &endoLambda[1])
	var b3 secp256k1.FieldVal
	b3.Mul2(&endoBeta[2], &endoBeta[1]).Normalize()
	if !l3.Equals(&endoLambda[0]) || !b3.IsOne() || endoLambda[1].Equals(&endoLambda[0]) || endoBeta[1].IsOne() {
		t.Fatal("λ or β is not a non-trivial cube root of unity")
	}
}

func TestDegenerateCentreReseeds(t *testing.T) {
	tab := tableFor(8)
	for _, start := range []int{5, -3, -17} { // B = 5G, -3G, -(2n+1)G
		w := newWorker(tab, seeded(2))
		var k secp256k1.ModNScalar
		if start >= 0 {
			k.SetInt(uint32(start))
		} else {
			k.SetInt(uint32(-start)).Negate()
		}
		w.setScalar(&k)
		tries, hit, err := w.batch(&nowhere)
		if tries != 0 || hit || err != nil {
			t.Fatalf("start %d: tries %d hit %v err %v, want a silent reseed", start, tries, hit, err)
		}
		if w.k.Equals(&k) {
			t.Fatalf("start %d: k not reseeded", start)
		}
		checkBatch(t, w)
	}
}

// checkResult checks a grind result: in the region, the key's own peer ID,
// signs and verifies, and go-libp2p runs a host on it.
func checkResult(t *testing.T, res Result, target keyspace.Region) {
	t.Helper()
	if res.Key == nil || res.ID == "" || res.Tries == 0 || res.Elapsed <= 0 {
		t.Fatalf("incomplete result %+v", res)
	}
	if !target.Contains(keyspace.PeerPos([]byte(res.ID))) {
		t.Fatalf("peer %s at %s is not in %s", res.ID, keyspace.PeerPos([]byte(res.ID)), target)
	}
	id, err := peer.IDFromPublicKey(res.Key.GetPublic())
	if err != nil || id != res.ID {
		t.Fatalf("key's peer ID %s (%v), result says %s", id, err, res.ID)
	}
	pub, err := res.ID.ExtractPublicKey()
	if err != nil || !pub.Equals(res.Key.GetPublic()) {
		t.Fatalf("public key in the peer ID does not match the key (%v)", err)
	}
	msg := []byte("up: moved to " + target.String())
	sig, err := res.Key.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := pub.Verify(msg, sig); !ok || err != nil {
		t.Fatalf("signature does not verify: %v %v", ok, err)
	}
	if ok, _ := pub.Verify(append(msg, '!'), sig); ok {
		t.Fatal("signature verifies for another message")
	}
	h, err := libp2p.New(libp2p.Identity(res.Key), libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.ID() != res.ID {
		t.Fatalf("host ID %s, want %s", h.ID(), res.ID)
	}
}

func TestGrind(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name string
		g    Grinder
		bits int
	}{
		{"secp256k1/8", Secp256k1{}, 8},
		{"secp256k1/12", Secp256k1{}, 12},
		{"secp256k1/12/one-worker-small-batch", Secp256k1{Workers: 1, Batch: 3}, 12},
		{"secp256k1/0", Secp256k1{}, 0},
		{"ed25519/8", Ed25519{}, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target := randomRegion(rng, c.bits)
			res, err := c.g.Grind(context.Background(), target)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, res, target)
			t.Logf("%s: %d tries in %v", target, res.Tries, res.Elapsed)
		})
	}
}

func TestGrindFlipPrefix(t *testing.T) {
	// The load-balancing use: land beside a given peer across bit d.
	self := keyspace.PeerPos([]byte("some peer"))
	target := keyspace.FlipPrefix(self, 9)
	res, err := Secp256k1{}.Grind(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, target)
	if got := keyspace.CommonPrefixLen(self, keyspace.PeerPos([]byte(res.ID))); got != 9 {
		t.Fatalf("common prefix with self %d, want 9", got)
	}
}

func TestGrindDeterministic(t *testing.T) {
	target := randomRegion(rand.New(rand.NewPCG(5, 6)), 12)
	for _, mk := range []func() Grinder{
		func() Grinder { return Secp256k1{Workers: 1, Rand: seeded(7)} },
		func() Grinder { return Ed25519{Rand: seeded(7)} },
	} {
		a, err := mk().Grind(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		b, err := mk().Grind(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		if a.ID != b.ID || a.Tries != b.Tries || !a.Key.Equals(b.Key) {
			t.Fatalf("%T: runs differ: %s/%d vs %s/%d", mk(), a.ID, a.Tries, b.ID, b.Tries)
		}
		c, err := mk().Grind(context.Background(), randomRegion(rand.New(rand.NewPCG(8, 9)), 12))
		if err != nil {
			t.Fatal(err)
		}
		if c.ID == a.ID {
			t.Fatalf("%T: another region gave the same identity", mk())
		}
	}
}

func TestGrindCancel(t *testing.T) {
	target := randomRegion(rand.New(rand.NewPCG(10, 11)), 40)
	for _, g := range []Grinder{Secp256k1{}, Secp256k1{Workers: 3, Batch: 64}, Ed25519{}} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		res, err := g.Grind(ctx, target)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%T: err %v, want deadline exceeded", g, err)
		}
		if took > time.Second {
			t.Fatalf("%T: returned after %v", g, took)
		}
		if res.Key != nil || res.ID != "" || res.Tries == 0 || res.Elapsed < 100*time.Millisecond {
			t.Fatalf("%T: result %+v", g, res)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Secp256k1{}).Grind(ctx, target); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: err %v", err)
	}
}

func TestBatchClamped(t *testing.T) {
	if n := tableFor(MaxBatch * 4).n; n != MaxBatch {
		t.Fatalf("batch %d, want it clamped to %d", n, MaxBatch)
	}
	if n := tableFor(-1).n; n != DefaultBatch {
		t.Fatalf("batch %d, want the default %d", n, DefaultBatch)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

func TestGrindRandError(t *testing.T) {
	for _, g := range []Grinder{Secp256k1{Rand: failingReader{}}, Ed25519{Rand: failingReader{}}} {
		if _, err := g.Grind(context.Background(), randomRegion(rand.New(rand.NewPCG(1, 1)), 8)); err == nil {
			t.Fatalf("%T: no error from a failing reader", g)
		}
	}
}

func TestRate(t *testing.T) {
	s, e := Rate(Secp256k1{}, 100*time.Millisecond), Rate(Ed25519{}, 100*time.Millisecond)
	if s <= 0 || e <= 0 {
		t.Fatalf("rates %v %v", s, e)
	}
	t.Logf("secp256k1 %.0f/s, ed25519 %.0f/s", s, e)
	if got := Expected(20); got != 1<<20 {
		t.Fatalf("Expected(20) = %v", got)
	}
}
