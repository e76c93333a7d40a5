package node_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkHotSpotHalving: a keyword hot spot appears (2,000 entries of one
// keyword, all on one index node of 32); balancing periods run until the
// largest holder has at most half of them. Reports the periods and moves
// it took per halving; ns/op is the wall time of those periods (grinding,
// hand-over and rewrites included, setup excluded). In protocol time the
// halving takes periods × the balancing period (docs/design.md: 20–60 min).
func BenchmarkHotSpotHalving(b *testing.B) {
	var periods, moves int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		net, clock := lbNet(b, 32, uint64(90+i))
		submitN(b, net, 2000, []string{"lhc"})
		first, _, _ := entryStats(net)
		ctx := context.Background()
		b.StartTimer()
		halved := false
		for period := 1; period <= 20; period++ {
			clock.Advance(2 * time.Minute)
			net.WriteAll(ctx)
			moves += net.BalanceAll(ctx)
			periods++
			if maxN, _, _ := entryStats(net); 2*maxN <= first {
				halved = true
				break
			}
		}
		b.StopTimer()
		if !halved {
			b.Fatalf("hot spot of %d entries not halved in 20 periods", first)
		}
		net.Close()
	}
	b.ReportMetric(float64(periods)/float64(b.N), "periods/halving")
	b.ReportMetric(float64(moves)/float64(b.N), "moves/halving")
}

// TestMovesStop: in a network whose load is already fairly even (jobs
// under 500 keywords spread over the keyspace), balancing makes some moves
// (a node that moves hands its jobs to its neighbours, which can make one
// of them the next heavy node) but they die out: within 30 periods comes a
// run of 4 periods without a move, and the moves in all are fewer than the
// nodes, so no node keeps moving back and forth.
func TestMovesStop(t *testing.T) {
	if testing.Short() {
		t.Skip("up to 30 balancing periods on 32 nodes")
	}
	const nodes, quiet = 32, 4
	seed := uint64(86)
	if s := os.Getenv("UP_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	net, clock := lbNet(t, nodes, seed)
	submitN(t, net, 3000, nil)
	ctx := context.Background()
	var perPeriod []int
	total, still := 0, 0
	for range 30 {
		clock.Advance(2 * time.Minute)
		net.WriteAll(ctx)
		m := net.BalanceAll(ctx)
		perPeriod = append(perPeriod, m)
		total += m
		if still = still + 1; m > 0 {
			still = 0
		}
		if still == quiet {
			break
		}
	}
	t.Logf("moves per period: %v (%d in all)", perPeriod, total)
	if still < quiet {
		t.Fatalf("no %d periods in a row without a move in 30: %v", quiet, perPeriod)
	}
	if total >= nodes {
		t.Fatalf("%d moves among %d nodes: nodes keep moving", total, nodes)
	}
}
