package blobnet_test

import (
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/blob/fetch"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/testnet"
)

// BenchmarkFetch32MiB fetches a 32 MiB blob from its r = 5 holders over
// loopback TCP (the full libp2p stack: TCP, Noise, yamux; five nodes and
// a client in one process), verifying every chunk, with the fetcher's
// defaults (8 chunks in flight), and reports the throughput in MiB/s.
// The upload is outside the timing.
func BenchmarkFetch32MiB(b *testing.B) {
	const size = 32 << 20
	f := testnet.StartFixture(b, nil, testnet.Options{Nodes: 5, Seed: 14, Transport: testnet.TCP})
	bn := &blobNet{net: f.Net, clock: f.Clock, proj: f.Project.Agent()}
	blb := newBlob(b, "lhc", 40, size)
	bn.upload(b, blb)
	client, err := f.Net.NewAgent(context.Background(), certs.RoleClient, "alice")
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, sources, err := blobclient.Sources(ctx, client, blb.m.Key())
	if err != nil || len(sources) != 5 {
		b.Fatalf("sources: %d, %v", len(sources), err)
	}
	fetcher := &fetch.Fetcher{Sources: sources}
	b.SetBytes(size)
	for b.Loop() {
		res, err := fetcher.Fetch(ctx, m)
		if err != nil || len(res.Data) != size {
			b.Fatalf("fetch: %v", err)
		}
	}
	b.ReportMetric(float64(size)*float64(b.N)/(1<<20)/b.Elapsed().Seconds(), "MiB/s")
}
