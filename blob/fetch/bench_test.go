package fetch

import (
	"context"
	"testing"

	"github.com/ipfs/go-cid"
)

// BenchmarkFetch32MiB fetches a 32 MiB blob from r = 5 in-memory replicas
// (each request copies the chunk, as a stream would), verifying every
// chunk, and reports the throughput in MiB/s; "one-liar" has one replica
// alter every chunk it serves. The network implementation will be
// measured the same way over libp2p on loopback.
func BenchmarkFetch32MiB(b *testing.B) {
	const size = 32 << 20
	data, m, chunks := testBlob(b, 32, size)
	for _, bc := range []struct {
		name string
		liar bool
	}{{"r5", false}, {"r5-one-liar", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ms := replicas(5, chunks)
			if bc.liar {
				ms[0].lieOn = func(cid.Cid) bool { return true }
			}
			f := &Fetcher{Sources: sources(ms)}
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				res, err := f.Fetch(context.Background(), m)
				if err != nil || len(res.Data) != len(data) {
					b.Fatalf("Fetch: %v", err)
				}
			}
			b.ReportMetric(float64(size)*float64(b.N)/(1<<20)/b.Elapsed().Seconds(), "MiB/s")
		})
	}
}
