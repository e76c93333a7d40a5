package job

import (
	"crypto/ed25519"
	"testing"
)

func BenchmarkSign(b *testing.B) {
	key, spec := testKey(1), testSpec()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sign(spec, key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	enc := mustSign(b, testSpec(), testKey(1)).Encode()
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	key := testKey(1)
	pub := key.Public().(ed25519.PublicKey)
	signed := mustSign(b, testSpec(), key)
	b.ReportAllocs()
	for b.Loop() {
		if err := signed.Verify(pub); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCID(b *testing.B) {
	signed := mustSign(b, testSpec(), testKey(1))
	b.ReportAllocs()
	for b.Loop() {
		_ = signed.CID()
	}
}

func BenchmarkMerge(b *testing.B) {
	states := []State{{}, claimed("client-a", 10, 20), claimed("client-b", 10, 15),
		finished("client-a", 30, "result-1"), finished("client-b", 30, "result-2"), collected(40)}
	b.ReportAllocs()
	var acc State
	i := 0
	for b.Loop() {
		acc = Merge(Expire(acc, 12), states[i%len(states)])
		i++
	}
	if acc.Phase != Collected {
		b.Fatalf("merged to %s", acc.Phase)
	}
}
