package testnet_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// BenchmarkLookup32 measures one closest-r lookup in a 32-node network,
// uncached (a fresh key each time) and cached (the same key again): RPCs
// per lookup and process CPU per lookup, all parties included.
func BenchmarkLookup32(b *testing.B) {
	for _, tr := range []struct {
		name string
		t    testnet.Transport
	}{{"tcp", testnet.TCP}, {"mocknet", testnet.Mocknet}} {
		b.Run(tr.name, func(b *testing.B) {
			net, err := testnet.Start(context.Background(), testnet.Options{Nodes: 32, Dir: b.TempDir(), Transport: tr.t, Seed: 9})
			if err != nil {
				b.Fatal(err)
			}
			defer net.Close()
			nodes := net.Live()
			ctx := context.Background()
			b.Run("uncached", func(b *testing.B) {
				var rpcs int64
				cpu0 := testkit.CPUTime()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					nd := nodes[i%len(nodes)]
					before := nd.DHT().Stats().RPCs
					if _, err := nd.DHT().ClosestPeers(ctx, fmt.Appendf(nil, "bench-%d", i)); err != nil {
						b.Fatal(err)
					}
					rpcs += nd.DHT().Stats().RPCs - before
				}
				b.ReportMetric(float64(rpcs)/float64(b.N), "RPCs/lookup")
				b.ReportMetric(float64((testkit.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/lookup")
			})
			b.Run("cached", func(b *testing.B) {
				key := []byte("bench-cached")
				nd := nodes[0]
				if _, err := nd.DHT().ClosestPeers(ctx, key); err != nil {
					b.Fatal(err)
				}
				before := nd.DHT().Stats().RPCs
				cpu0 := testkit.CPUTime()
				b.ResetTimer()
				for b.Loop() {
					if _, err := nd.DHT().ClosestPeers(ctx, key); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(nd.DHT().Stats().RPCs-before)/float64(b.N), "RPCs/lookup")
				b.ReportMetric(float64((testkit.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/lookup")
			})
		})
	}
}
