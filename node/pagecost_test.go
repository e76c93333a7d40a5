package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// pagePollEvery is how often the node's page polls /status and
// /api/series: 2 s.
const pagePollEvery = 2 * time.Second

// BenchmarkPagePoll measures what the node's web page costs the node: one
// poll is GET /status and GET /api/series over loopback HTTP, the series
// full (MaxSamples samples, each with request rates of 12 protocols), on
// a node of a 16-node network. It reports the process's CPU time per poll
// (the client's half included, so an upper bound), the bytes served, and
// the share of one core a page polling every 2 s takes; and the CPU time
// of one sample the node's loop records every SeriesStep.
func BenchmarkPagePoll(b *testing.B) {
	tn, err := testnet.Start(context.Background(), testnet.Options{
		Nodes: 16, Dir: b.TempDir(), Seed: 41,
		Configure: func(i int, cfg *node.Config) {
			if i == 0 {
				cfg.HTTPAddr = "127.0.0.1:0"
				cfg.SeriesStep = time.Hour // the benchmark fills the series
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer tn.Close()
	nd := tn.Node(0)
	fillSeries(nd.SeriesSampler(), 12)
	base := "http://" + nd.HTTPAddr()
	c := &http.Client{Timeout: 10 * time.Second}
	poll := func() int64 {
		var n int64
		for _, path := range []string{"/status", "/api/series"} {
			resp, err := c.Get(base + path)
			if err != nil {
				b.Fatal(err)
			}
			k, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("GET %s: %v %v", path, resp.Status, err)
			}
			n += k
		}
		return n
	}
	poll() // warm: connections, caches
	var bytes int64
	b.ResetTimer()
	cpu0 := testkit.CPUTime()
	for b.Loop() {
		bytes += poll()
	}
	cpu := testkit.CPUTime() - cpu0
	b.StopTimer()
	perPoll := cpu / time.Duration(b.N)
	b.ReportMetric(float64(perPoll.Microseconds()), "cpu-µs/poll")
	b.ReportMetric(float64(bytes)/float64(b.N), "B/poll")
	b.ReportMetric(100*perPoll.Seconds()/pagePollEvery.Seconds(), "core-%@2s")

	const samples = 200
	cpu0 = testkit.CPUTime()
	for range samples {
		nd.Sample()
	}
	perSample := (testkit.CPUTime() - cpu0) / samples
	b.ReportMetric(float64(perSample.Microseconds()), "cpu-µs/sample")
}

// fillSeries fills s with MaxSamples samples, each with rates of protos
// protocols.
func fillSeries(s *node.Sampler, protos int) {
	t0 := time.Now().Add(-node.MaxSamples * node.DefaultSeriesStep)
	rpc := map[string]float64{}
	for i := range node.MaxSamples + 1 {
		for p := range protos {
			rpc[fmt.Sprintf("/up/proto%02d/1.0.0", p)] += float64(1 + i%7 + p)
		}
		s.Add(t0.Add(time.Duration(i)*node.DefaultSeriesStep), node.Reading{
			JobsHeld: 100 + i%13, IndexEntries: 400 + i%17, Load: 0.25 + float64(i%10)/40,
			Moves: i / 300, Connections: 20 + i%5, Instance: "x", RPC: rpc,
		})
	}
}
