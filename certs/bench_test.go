package certs

import (
	"crypto/ed25519"
	"testing"
	"time"
)

func BenchmarkVerifyCertCold(b *testing.B) {
	f := newFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		// A new Verifier per iteration: always a cache miss (parse + signature).
		if _, err := NewVerifier(f.ca.Cert).VerifyCert(f.node.Raw, t0, RoleNode); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyCertCached(b *testing.B) {
	f := newFixture(b)
	v := NewVerifier(f.ca.Cert)
	rl, err := f.ca.Revoke(nil, bigs(1, 2, 3), t0, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	v.SetRevocationList(rl)
	if _, err := v.VerifyCert(f.node.Raw, t0, RoleNode); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyCert(f.node.Raw, t0, RoleNode); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignPosition(b *testing.B) {
	k := mustKey(b, 70)
	p := samplePosition()
	b.ReportAllocs()
	for b.Loop() {
		_ = SignPosition(k, p)
	}
}

func BenchmarkVerifyPosition(b *testing.B) {
	k := mustKey(b, 70)
	sp := SignPosition(k, samplePosition())
	pub := k.Public().(ed25519.PublicKey)
	b.ReportAllocs()
	for b.Loop() {
		if err := sp.Verify(pub); err != nil {
			b.Fatal(err)
		}
	}
}
