package grind

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sync"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht/keyspace"
)

// The secp256k1 endomorphism λ·(x, y) = (β·x, y), with β a cube root of
// unity mod p and λ one mod N; these are the values dcrd's secp256k1 (and
// libsecp256k1) use. Index e holds β^e and λ^e.
var (
	endoBeta   [3]secp256k1.FieldVal
	endoLambda [3]secp256k1.ModNScalar
)

func init() {
	b, _ := hex.DecodeString("7ae96a2b657c07106e64479eac3434e99cf0497512f58995c1396c28719501ee")
	l, _ := hex.DecodeString("5363ad4cc05c30e0a5261c028812645a122e22ea20816678df02967c1b23bd72")
	endoBeta[0].SetInt(1)
	endoBeta[1].SetByteSlice(b)
	endoBeta[2].SquareVal(&endoBeta[1]).Normalize()
	endoLambda[0].SetInt(1)
	endoLambda[1].SetByteSlice(l)
	endoLambda[2].SquareVal(&endoLambda[1])
}

// table holds the affine points j·G for j = 1..n (index j-1), the
// negations of their coordinates, and the step (2n+1)·G. It is read-only.
type table struct {
	n          int
	x, y       []secp256k1.FieldVal // normalized
	negX, negY []secp256k1.FieldVal // magnitude 2
	sy, negSx  secp256k1.FieldVal   // (2n+1)·G: y normalized, -x magnitude 2
	sx         secp256k1.FieldVal   // normalized
	step       secp256k1.ModNScalar // 2n+1
}

var tables sync.Map // int -> *table

// tableFor returns the (cached) table for batch size n, defaulted and
// clamped.
func tableFor(n int) *table {
	if n <= 0 {
		n = DefaultBatch
	}
	n = min(n, MaxBatch)
	if t, ok := tables.Load(n); ok {
		return t.(*table)
	}
	t := &table{
		n: n, x: make([]secp256k1.FieldVal, n), y: make([]secp256k1.FieldVal, n),
		negX: make([]secp256k1.FieldVal, n), negY: make([]secp256k1.FieldVal, n),
	}
	// Jacobian j·G by repeated addition, then all to affine with one
	// batched inversion of the Z coordinates.
	ps := make([]secp256k1.JacobianPoint, n)
	secp256k1.ScalarBaseMultNonConst(&endoLambda[0], &ps[0]) // 1·G
	for j := 1; j < n; j++ {
		secp256k1.AddNonConst(&ps[j-1], &ps[0], &ps[j])
	}
	pre := make([]secp256k1.FieldVal, n)
	pre[0].Set(&ps[0].Z)
	for j := 1; j < n; j++ {
		pre[j].Mul2(&pre[j-1], &ps[j].Z)
	}
	var inv, zi, zi2 secp256k1.FieldVal
	inv.Set(&pre[n-1]).Inverse()
	for j := n - 1; j >= 0; j-- {
		zi.Set(&inv)
		if j > 0 {
			zi.Mul(&pre[j-1])
			inv.Mul(&ps[j].Z)
		}
		zi2.SquareVal(&zi)
		t.x[j].Mul2(&ps[j].X, &zi2).Normalize()
		t.y[j].Mul2(&ps[j].Y, zi2.Mul(&zi)).Normalize()
		t.negX[j].NegateVal(&t.x[j], 1)
		t.negY[j].NegateVal(&t.y[j], 1)
	}
	t.step.SetInt(uint32(2*n + 1))
	var s secp256k1.JacobianPoint
	secp256k1.ScalarBaseMultNonConst(&t.step, &s)
	s.ToAffine()
	t.sx, t.sy = s.X, s.Y
	t.negSx.NegateVal(&s.X, 1)
	v, _ := tables.LoadOrStore(n, t)
	return v.(*table)
}

// cand names a candidate by how its private key derives from the worker's
// centre scalar k: (-1)^neg · λ^endo · (k + off) mod N.
type cand struct {
	off  int
	endo uint8
	neg  bool
}

// scalar returns the candidate's private key scalar for centre scalar k.
func (c cand) scalar(k *secp256k1.ModNScalar) secp256k1.ModNScalar {
	var o, s secp256k1.ModNScalar
	if c.off >= 0 {
		o.SetInt(uint32(c.off))
	} else {
		o.SetInt(uint32(-c.off)).Negate()
	}
	s.Add2(k, &o).Mul(&endoLambda[c.endo])
	if c.neg {
		s.Negate()
	}
	return s
}

// xAt is where the x coordinate starts in a secp256k1 peer ID; the parity
// byte is just before it.
const xAt = len(secp256k1Prefix) + 1

// worker is one goroutine's search state: the centre B = k·G in affine
// coordinates and scratch space for a batch.
type worker struct {
	t      *table
	r      io.Reader
	k      secp256k1.ModNScalar
	bx, by secp256k1.FieldVal // normalized
	d, pre []secp256k1.FieldVal
	id     [xAt + 32]byte
	hit    cand
	// see, if set (tests only), is shown every candidate's peer ID bytes.
	see func(id []byte, c cand)
}

func newWorker(t *table, r io.Reader) *worker {
	w := &worker{t: t, r: r, d: make([]secp256k1.FieldVal, t.n+1), pre: make([]secp256k1.FieldVal, t.n+1)}
	copy(w.id[:], secp256k1Prefix[:])
	return w
}

// reseed draws a fresh non-zero scalar k < N from the reader and sets B = k·G.
func (w *worker) reseed() error {
	var b [32]byte
	defer clear(b[:])
	for {
		if _, err := io.ReadFull(w.r, b[:]); err != nil {
			return err
		}
		if w.k.SetBytes(&b) == 0 && !w.k.IsZero() {
			break
		}
	}
	w.setScalar(&w.k)
	return nil
}

// setScalar sets k and B = k·G.
func (w *worker) setScalar(k *secp256k1.ModNScalar) {
	var p secp256k1.JacobianPoint
	w.k.Set(k)
	secp256k1.ScalarBaseMultNonConst(&w.k, &p)
	p.ToAffine()
	w.bx, w.by = p.X, p.Y
}

// key returns the private key of the last hit and its peer ID, checked
// against the hit's peer ID bytes, still in w.id.
func (w *worker) key() (crypto.PrivKey, peer.ID, error) {
	s := w.hit.scalar(&w.k)
	b := s.Bytes()
	defer clear(b[:])
	key, err := crypto.UnmarshalSecp256k1PrivateKey(b[:])
	if err != nil {
		return nil, "", err
	}
	id, err := checkKey(key, w.id[:])
	return key, id, err
}

// probe tries the six candidates of the point (x, y) = (k+off)·G (both
// normalized): ±(x, y), ±(β·x, y), ±(β²·x, y). It returns how many it
// tried and whether the last one lies in target, recording it in w.hit.
func (w *worker) probe(x, y *secp256k1.FieldVal, off int, target *keyspace.Region) (int, bool) {
	odd := y.IsOdd()
	n := 0
	var xe secp256k1.FieldVal
	for e := range uint8(3) {
		if e == 0 {
			x.PutBytesUnchecked(w.id[xAt:])
		} else {
			xe.Mul2(x, &endoBeta[e]).Normalize()
			xe.PutBytesUnchecked(w.id[xAt:])
		}
		for _, neg := range [2]bool{false, true} {
			n++
			w.id[xAt-1] = secp256k1.PubKeyFormatCompressedEven
			if odd != neg {
				w.id[xAt-1] = secp256k1.PubKeyFormatCompressedOdd
			}
			c := cand{off: off, endo: e, neg: neg}
			if w.see != nil {
				w.see(w.id[:], c)
			}
			if target.Contains(sha256.Sum256(w.id[:])) {
				w.hit = c
				return n, true
			}
		}
	}
	return n, false
}

// batch tries the candidates of B and B ± j·G for j = 1..n, then moves B on
// by (2n+1)·G. It returns how many candidates it tried and whether one hit
// (then w.hit names it and B is left unmoved, so key works). In the 2^-200
// event that B is ±j·G or -(2n+1)·G (a zero denominator), it draws a fresh k
// and reports no candidates.
func (w *worker) batch(target *keyspace.Region) (tries uint64, hit bool, err error) {
	t, d, pre := w.t, w.d, w.pre
	var negBx, negBy, inv, l, x3, y3 secp256k1.FieldVal
	negBx.NegateVal(&w.bx, 1) // magnitude 2
	negBy.NegateVal(&w.by, 1)

	// Denominators x_j - bx and their prefix products.
	for j := range t.n {
		d[j].Set(&t.x[j]).Add(&negBx) // magnitude 3
	}
	d[t.n].Set(&t.sx).Add(&negBx)
	pre[0].Set(&d[0])
	for j := 1; j <= t.n; j++ {
		pre[j].Mul2(&pre[j-1], &d[j])
	}
	inv.Set(&pre[t.n]).Normalize()
	if inv.IsZero() {
		return 0, false, w.reseed()
	}
	inv.Inverse()
	// Walk back: d[j] becomes 1/(x_j - bx).
	for j := t.n; j > 0; j-- {
		l.Mul2(&inv, &pre[j-1])
		inv.Mul(&d[j])
		d[j].Set(&l)
	}
	d[0].Set(&inv)

	n, hit := w.probe(&w.bx, &w.by, 0, target)
	tries += uint64(n)
	for j := 0; j < t.n && !hit; j++ {
		addAffine(&x3, &y3, &w.bx, &negBx, &negBy, &t.negX[j], &t.y[j], &d[j])
		n, hit = w.probe(&x3, &y3, j+1, target)
		tries += uint64(n)
		if hit {
			break
		}
		addAffine(&x3, &y3, &w.bx, &negBx, &negBy, &t.negX[j], &t.negY[j], &d[j])
		n, hit = w.probe(&x3, &y3, -(j + 1), target)
		tries += uint64(n)
	}
	if hit {
		return tries, true, nil
	}
	// Move on: B += (2n+1)·G.
	addAffine(&w.bx, &w.by, &w.bx, &negBx, &negBy, &t.negSx, &t.sy, &d[t.n])
	w.k.Add(&t.step)
	return tries, false, nil
}

// addAffine sets (x3, y3) = (bx, by) + (px, py) given negBx = -bx,
// negBy = -by, negPx = -px (magnitudes at most 2), py of magnitude at most 2
// and inv = 1/(px - bx) (magnitude 1); x3 and y3 come out normalized and may
// alias bx and by.
func addAffine(x3, y3, bx, negBx, negBy, negPx, py, inv *secp256k1.FieldVal) {
	var l, x secp256k1.FieldVal
	l.Set(py).Add(negBy).Mul(inv)                     // slope l = (py - by)/(px - bx)
	x.SquareVal(&l).Add(negBx).Add(negPx).Normalize() // l² - bx - px
	y3.NegateVal(&x, 1).Add(bx).Mul(&l).Add(negBy)    // l(bx - x3) - by
	y3.Normalize()
	x3.Set(&x)
}
