package certs

import (
	"bytes"
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"
)

// Sentinels a decoder may legitimately return; anything else from a fuzzed
// input is a bug in error wrapping.
var decodeSentinels = []error{ErrMalformed, ErrUnknownIssuer, ErrWrongRole, ErrExpired, ErrNotYetValid, ErrRevoked, ErrBadSignature}

func isSentinel(err error) bool {
	for _, s := range decodeSentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func FuzzVerifyCert(f *testing.F) {
	fx := newFixture(f)
	rl, err := fx.ca.Revoke(nil, []*big.Int{fx.client.SerialNumber}, t0, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	v := NewVerifier(fx.ca.Cert)
	v.SetRevocationList(rl)
	for _, c := range [][]byte{fx.node.Raw, fx.project.Raw, fx.client.Raw, fx.ca.Cert.Raw, fx.foreign.Raw} {
		f.Add(c)
	}
	f.Add(EncodeCertPEM(fx.node))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := v.VerifyCert(b, t0)
		if err == nil {
			if id == nil || id.Cert == nil || !isLeafRole(id.Role) || len(id.PublicKey) != ed25519.PublicKeySize ||
				!bytes.Equal(id.Cert.Raw, b) || id.Cert.CheckSignatureFrom(fx.ca.Cert) != nil || rl.IsRevoked(id.Serial) {
				t.Fatalf("bad identity accepted: %+v", id)
			}
		} else if !isSentinel(err) {
			t.Fatalf("unwrapped error: %v", err)
		}
		c, err := DecodeCertPEM(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeCertPEM: unwrapped error: %v", err)
			}
			return
		}
		if _, ok := c.PublicKey.(ed25519.PublicKey); !ok {
			t.Fatal("DecodeCertPEM returned a non-ed25519 certificate")
		}
		if _, err := v.VerifyCert(c.Raw, t0); err != nil && !isSentinel(err) {
			t.Fatalf("unwrapped error: %v", err)
		}
	})
}

func FuzzParseRevocationList(f *testing.F) {
	fx := newFixture(f)
	rl1, err := fx.ca.Revoke(nil, bigs(1, 2, 300), t0, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	rl2, err := fx.ca.Revoke(rl1, []*big.Int{fx.node.SerialNumber}, t0, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	other, err := fx.otherCA.Revoke(nil, bigs(1), t0, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	for _, rl := range []*RevocationList{rl1, rl2, other} {
		f.Add(rl.DER)
		f.Add(rl.PEM())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rl, err := ParseRevocationList(b, fx.ca.Cert)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("unwrapped error: %v", err)
			}
			return
		}
		if rl.Number == nil || rl.Number.Sign() < 0 {
			t.Fatal("accepted list without a valid number")
		}
		s := rl.Serials()
		for i, x := range s {
			if !rl.IsRevoked(x) {
				t.Fatalf("listed serial %v not revoked", x)
			}
			if i > 0 && s[i-1].Cmp(x) >= 0 {
				t.Fatal("serials not strictly ascending")
			}
		}
		again, err := ParseRevocationList(rl.PEM(), fx.ca.Cert)
		if err != nil || again.Number.Cmp(rl.Number) != 0 || len(again.Serials()) != len(s) {
			t.Fatalf("re-parse of accepted list: %v", err)
		}
	})
}

func FuzzUnmarshalSignedPosition(f *testing.F) {
	k := mustKey(f, 50)
	pub := k.Public().(ed25519.PublicKey)
	f.Add(SignPosition(k, samplePosition()).Marshal())
	f.Add(SignPosition(k, Position{PeerID: []byte{1}, IssuedAt: time.Unix(0, 0)}).Marshal())
	f.Add(SignPosition(k, Position{PeerID: bytes.Repeat([]byte{9}, MaxPeerIDLen), Seq: ^uint64(0), IssuedAt: t0}).Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		sp, err := UnmarshalSignedPosition(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unwrapped error: %v", err)
			}
			return
		}
		if got := sp.Marshal(); !bytes.Equal(got, b) {
			t.Fatalf("round trip differs:\n in %x\nout %x", b, got)
		}
		if err := sp.Verify(pub); err != nil && !errors.Is(err, ErrBadSignature) {
			t.Fatalf("decoded position fails Verify structurally: %v", err)
		}
	})
}

func FuzzReadSubjectKey(f *testing.F) {
	k := mustKey(f, 51)
	csr, err := CreateRequest(k, "fuzz-node")
	if err != nil {
		f.Fatal(err)
	}
	pubPEM, _ := EncodePublicKeyPEM(k.Public().(ed25519.PublicKey))
	f.Add(csr)
	f.Add(pubPEM)
	block, _ := pem.Decode(csr)
	f.Add(block.Bytes)
	f.Fuzz(func(t *testing.T, b []byte) {
		pub1, name1, err1 := ParseRequest(b)
		pub2, name2, err2 := ReadSubjectKey(b)
		for _, err := range []error{err1, err2} {
			if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrBadSignature) {
				t.Fatalf("unwrapped error: %v", err)
			}
		}
		if err1 == nil {
			if len(pub1) != ed25519.PublicKeySize {
				t.Fatal("bad key length")
			}
			if err2 != nil || !pub1.Equal(pub2) || name1 != name2 {
				t.Fatalf("ReadSubjectKey disagrees with ParseRequest: %v", err2)
			}
		}
		if err2 == nil && len(pub2) != ed25519.PublicKeySize {
			t.Fatal("bad key length")
		}
	})
}

func FuzzDecodePrivateKeyPEM(f *testing.F) {
	for _, seed := range []byte{60, 61} {
		p, err := EncodePrivateKeyPEM(mustKey(f, seed))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	pubPEM, _ := EncodePublicKeyPEM(mustKey(f, 60).Public().(ed25519.PublicKey))
	f.Add(pubPEM)
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodePrivateKeyPEM(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unwrapped error: %v", err)
			}
			return
		}
		if len(k) != ed25519.PrivateKeySize {
			t.Fatal("bad key length")
		}
		p, err := EncodePrivateKeyPEM(k)
		if err != nil {
			t.Fatal(err)
		}
		k2, err := DecodePrivateKeyPEM(p)
		if err != nil || !k.Equal(k2) {
			t.Fatalf("re-encode round trip: %v", err)
		}
		// The key must be usable: signatures verify under its public half.
		if !ed25519.Verify(k.Public().(ed25519.PublicKey), []byte("m"), ed25519.Sign(k, []byte("m"))) {
			t.Fatal("decoded key is inconsistent")
		}
	})
}
