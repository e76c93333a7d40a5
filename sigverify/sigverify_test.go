package sigverify

import (
	"crypto/ed25519"
	"math/rand/v2"
	"slices"
	"testing"
)

// cases are signatures to judge: valid ones, and each kind of damage.
func cases(t testing.TB) (pubs []ed25519.PublicKey, msgs, sigs [][]byte) {
	rng := rand.NewChaCha8([32]byte{7})
	for i := range 64 {
		pub, priv, err := ed25519.GenerateKey(rng)
		if err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, i*7)
		_, _ = rng.Read(msg)
		sig := ed25519.Sign(priv, msg)
		flip := func(b []byte, at int) []byte { b = append([]byte(nil), b...); b[at%len(b)] ^= 1 << (at % 8); return b }
		// valid; message, signature's R and S, key altered; S + L
		// (malleated, refused by the standard library); key of another;
		// a key that is not a point; the identity as key.
		highS := append([]byte(nil), sig...)
		addL(highS[32:])
		notPoint := make([]byte, 32)
		notPoint[0] = 2
		identity := make([]byte, 32)
		identity[0] = 1
		for _, c := range []struct {
			pub      []byte
			msg, sig []byte
		}{
			{pub, msg, sig},
			{pub, flip(append(msg, 0), i), sig},
			{pub, msg, flip(sig, i)},
			{pub, msg, flip(sig, 32+i)},
			{flip(pub, i), msg, sig},
			{pub, msg, highS},
			{notPoint, msg, sig},
			{identity, msg, sig},
		} {
			pubs, msgs, sigs = append(pubs, c.pub), append(msgs, c.msg), append(sigs, c.sig)
		}
	}
	return pubs, msgs, sigs
}

// addL adds the group order L to the little-endian scalar s in place.
func addL(s []byte) {
	l := [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}
	carry := 0
	for i := range s {
		v := int(s[i]) + int(l[i]) + carry
		s[i], carry = byte(v), v>>8
	}
}

// TestMatchesStdlib: every answer is crypto/ed25519's, from a cold and
// from a warm cache; the valid signatures are accepted (control: the
// damaged ones are not, so the comparison can fail).
func TestMatchesStdlib(t *testing.T) {
	pubs, msgs, sigs := cases(t)
	valid := 0
	for round := range 2 {
		for i := range pubs {
			want := ed25519.Verify(pubs[i], msgs[i], sigs[i])
			if got := Verify(pubs[i], msgs[i], sigs[i]); got != want {
				t.Fatalf("round %d, case %d (kind %d): %v, crypto/ed25519 says %v", round, i, i%8, got, want)
			}
			if want && round == 0 {
				valid++
			}
		}
	}
	if valid != 64 {
		t.Fatalf("%d of %d cases valid, want the 64 undamaged only", valid, len(pubs))
	}
	if Verify(pubs[0][:31], msgs[0], sigs[0]) || Verify(pubs[0], msgs[0], sigs[0][:63]) {
		t.Fatal("a short key or signature verified")
	}
}

// FuzzMatchesStdlib: on any key, message and signature, Verify answers
// as crypto/ed25519 does.
func FuzzMatchesStdlib(f *testing.F) {
	pubs, msgs, sigs := cases(f)
	for i := range pubs {
		f.Add([]byte(pubs[i]), msgs[i], sigs[i])
	}
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		if len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
			if Verify(pub, msg, sig) {
				t.Fatal("wrong lengths verified")
			}
			return
		}
		if got, want := Verify(pub, msg, sig), ed25519.Verify(pub, msg, sig); got != want {
			t.Fatalf("Verify = %v, crypto/ed25519 = %v", got, want)
		}
	})
}

// BenchmarkVerify compares a verification with a cached key against the
// standard library's:
//
//	go test -run '^$' -bench . ./sigverify/
func BenchmarkVerify(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(rand.NewChaCha8([32]byte{8}))
	msg := make([]byte, 300)
	sig := ed25519.Sign(priv, msg)
	b.Run("stdlib", func(b *testing.B) {
		for range b.N {
			ed25519.Verify(pub, msg, sig)
		}
	})
	b.Run("sigverify", func(b *testing.B) {
		for range b.N {
			Verify(pub, msg, sig)
		}
	})
}

// TestOnce: a valid signature is remembered, an invalid one never is, a
// damaged signature of a remembered message still fails (the verdict is
// per key, message and signature), and a full cache starts afresh.
func TestOnce(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	pub := key.Public().(ed25519.PublicKey)
	msg := []byte("root")
	sig := ed25519.Sign(key, msg)
	bad := append([]byte(nil), sig...)
	bad[3] ^= 1
	o := NewOnce(2)
	for range 3 {
		if !o.Verify(pub, msg, sig) {
			t.Fatal("valid signature refused")
		}
		if o.Verify(pub, msg, bad) {
			t.Fatal("damaged signature accepted after the valid one")
		}
	}
	if len(o.seen) != 1 {
		t.Fatalf("%d verdicts kept, want 1 (only the valid one)", len(o.seen))
	}
	for i := range 3 {
		m := []byte{byte(i)}
		if !o.Verify(pub, m, ed25519.Sign(key, m)) {
			t.Fatal("valid signature refused")
		}
	}
	if len(o.seen) > 2 {
		t.Fatalf("%d verdicts kept, bound 2", len(o.seen))
	}
	var none *Once
	if !none.Verify(pub, msg, sig) || none.Verify(pub, msg, bad) {
		t.Fatal("a nil Once does not verify as Verify")
	}
}

// TestVerifyMany: a batch of good signatures passes; a bad one anywhere
// is named (the first when several), as is a key that is not a point or
// a short signature; one signature alone goes through Verify. Control:
// the same lists with nothing altered pass.
func TestVerifyMany(t *testing.T) {
	const n = 6
	pubs := make([]ed25519.PublicKey, n)
	msgs, sigs := make([][]byte, n), make([][]byte, n)
	for i := range n {
		seed := make([]byte, ed25519.SeedSize)
		seed[0] = byte(i + 1)
		k := ed25519.NewKeyFromSeed(seed)
		pubs[i], msgs[i] = k.Public().(ed25519.PublicKey), []byte{byte(i), 'm'}
		sigs[i] = ed25519.Sign(k, msgs[i])
	}
	if bad := VerifyMany(pubs, msgs, sigs); bad != -1 {
		t.Fatalf("control: good signatures, bad %d", bad)
	}
	if bad := VerifyMany(pubs[:1], msgs[:1], sigs[:1]); bad != -1 {
		t.Fatalf("one good signature: bad %d", bad)
	}
	clone := func() ([]ed25519.PublicKey, [][]byte, [][]byte) {
		p, m, s := slices.Clone(pubs), slices.Clone(msgs), make([][]byte, n)
		for i := range sigs {
			s[i] = slices.Clone(sigs[i])
		}
		return p, m, s
	}
	for _, at := range []int{0, 3, n - 1} {
		p, m, s := clone()
		s[at][5] ^= 1
		if bad := VerifyMany(p, m, s); bad != at {
			t.Errorf("signature %d altered: bad %d", at, bad)
		}
		p, m, s = clone()
		m[at] = []byte("other")
		s[at+min(1, n-1-at)][0] ^= 1
		if bad := VerifyMany(p, m, s); bad != at {
			t.Errorf("message %d altered and the next signature too: bad %d, want the first", at, bad)
		}
	}
	p, m, s := clone()
	p[2] = make(ed25519.PublicKey, ed25519.PublicKeySize)
	p[2][0] = 2 // not a point of the curve's prime-order group, or not a point
	if bad := VerifyMany(p, m, s); bad != 2 {
		t.Errorf("a key that is not the signer's: bad %d", bad)
	}
	p, m, s = clone()
	s[4] = s[4][:10]
	if bad := VerifyMany(p, m, s); bad != 4 {
		t.Errorf("a short signature: bad %d", bad)
	}
}

// TestVerifyManyMatchesVerify: for every kind of damage cases() makes
// (a malleated S, a small-order or non-point key, …), a batch with a
// good signature beside it judges the case as Verify does.
func TestVerifyManyMatchesVerify(t *testing.T) {
	pubs, msgs, sigs := cases(t)
	for i := range pubs {
		j := (i + 1) % len(pubs)
		for !Verify(pubs[j], msgs[j], sigs[j]) {
			j = (j + 1) % len(pubs)
		}
		want := -1
		if !Verify(pubs[i], msgs[i], sigs[i]) {
			want = 1
		}
		if bad := VerifyMany([]ed25519.PublicKey{pubs[j], pubs[i]}, [][]byte{msgs[j], msgs[i]}, [][]byte{sigs[j], sigs[i]}); bad != want {
			t.Errorf("case %d: VerifyMany bad %d, Verify says %d", i, bad, want)
		}
	}
}
