package indexnet_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/up-pool/up/indexclient"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

func sumReceived(in *idxNet, proto string) float64 {
	var s float64
	for _, nd := range in.net.Live() {
		s += overlay.SumCounter(nd.Endpoint().Metrics().RPCReceived, "protocol", proto)
	}
	return s
}

// BenchmarkIndexWrite: the writers list b.N new jobs (5 keywords each) on
// 8 TCP nodes: CPU per entry and write RPCs per entry.
func BenchmarkIndexWrite(b *testing.B) {
	in := startIdxNetB(b, 8)
	p := in.project(b, "lhc")
	rng := rand.New(rand.NewPCG(46, 46))
	prepared := in.prepare(b, p, b.N, rng)
	ctx := context.Background()
	for _, r := range p.Submit(ctx, prepared) {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	rpc0 := sumReceived(in, wire.ProtoIndexWrite)
	cpu0 := testkit.CPUTime()
	b.ResetTimer()
	st := in.net.FlushAll(ctx)
	b.StopTimer()
	entries := st.Written
	if entries < 5*b.N {
		b.Fatalf("wrote %d entries for %d jobs", entries, b.N)
	}
	b.ReportMetric(float64((testkit.CPUTime()-cpu0).Microseconds())/float64(entries), "cpu-µs/entry")
	b.ReportMetric((sumReceived(in, wire.ProtoIndexWrite)-rpc0)/float64(entries), "RPCs/entry")
}

// BenchmarkFind: a client's Find of one job among 2,000 listed on 8 TCP
// nodes: CPU and RPCs per query. The test clock stands still while the
// loop runs, so the per-client query limit is lifted (as BenchmarkClaim
// lifts the claim limit) and entries do not expire when the clock jumps
// past a quarantine.
func BenchmarkFind(b *testing.B) {
	opts := testnet.Options{Transport: testnet.TCP}
	opts.Index.Server.QueryLimit, opts.Index.Server.QueryBurst = 1e6, 1e6
	opts.Index.Server.Table.Expiry = (7 * 24 * time.Hour).Milliseconds()
	in := startIdxNet(b, 8, 48, opts)
	p := in.project(b, "lhc")
	rng := rand.New(rand.NewPCG(47, 47))
	in.submitB(b, p, 2000, rng)
	cl := in.client(b, "worker")
	ctx := context.Background()
	if _, err := cl.Index().Find(ctx, "lhc", 1); err != nil { // warm the region cache
		b.Fatal(err)
	}
	sent0 := overlay.SumCounter(cl.Endpoint().Metrics().RPCSent, "", "")
	cpu0 := testkit.CPUTime()
	empty := 0
	b.ResetTimer()
	for b.Loop() {
		_, err := cl.Index().Find(ctx, "lhc AND NOT bw:modem", 1)
		if errors.Is(err, indexclient.ErrNoJob) {
			empty++
			in.clock.Advance(3 * time.Minute) // quarantine over
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((testkit.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/query")
	b.ReportMetric((overlay.SumCounter(cl.Endpoint().Metrics().RPCSent, "", "")-sent0)/float64(b.N), "RPCs/query")
	b.ReportMetric(float64(empty)/float64(b.N), "empty/query")
}
