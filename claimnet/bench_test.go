package claimnet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// BenchmarkClaim: one client claims b.N jobs (r = 5) on 16 TCP nodes:
// claims per second, RPCs and CPU per claim (all parties).
func BenchmarkClaim(b *testing.B) {
	ctx := context.Background()
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 16, Dir: b.TempDir(), Seed: 56, Transport: testnet.TCP,
		Configure: func(_ int, cfg *node.Config) { cfg.Claim.Limit, cfg.Claim.Burst = 1e6, 1e6 }})
	if err != nil {
		b.Fatal(err)
	}
	defer net.Close()
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		b.Fatal(err)
	}
	defer p.Agent().Close()
	prepared := make([]*project.Prepared, b.N)
	for i := range prepared {
		spec, _ := p.NewSpec("noop", []string{fmt.Sprint(i)}, []string{"lhc"}, time.Hour)
		prepared[i], _ = p.Sign(spec)
	}
	for _, r := range p.Submit(ctx, prepared) {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	a, err := net.NewAgent(ctx, certs.RoleClient, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	cl := claimclient.NewClaimer(a.Endpoint(), a.DHT(), nil, 0)
	hints := make([][]peer.ID, b.N)
	for i := range hints {
		hints[i] = net.TrueClosest(prepared[i].PlaceKey(), 5)
	}
	sent0 := overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "", "")
	cpu0, t0 := testkit.CPUTime(), time.Now()
	b.ResetTimer()
	for i := range b.N { // with the replica set an index entry carries
		if _, err := cl.ClaimAt(ctx, prepared[i].Key(), prepared[i].PlaceKey(), hints[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "claims/s")
	b.ReportMetric((overlay.SumCounter(a.Endpoint().Metrics().RPCSent, "", "")-sent0)/float64(b.N), "RPCs/claim")
	b.ReportMetric(float64((testkit.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/claim")
}
