package node_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/up-pool/up/loadbalance"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/project"
	"github.com/up-pool/up/testnet"
)

// lbEpoch is where the balancing tests' clock starts: a fixed instant, so
// that with the seed the job IDs, and so the whole run, replay.
var lbEpoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// lbNet is a network whose nodes balance by hand (BalanceAll), with a fake
// clock and a cool-down of one minute. Its index regions are narrow
// (p = 16, not the default 4), so a keyword's entries start on one node:
// the hot spot the balancing tests split.
func lbNet(t testing.TB, nodes int, seed uint64) (*testnet.Network, *testnet.Clock) {
	t.Helper()
	clock := testnet.NewClock(lbEpoch)
	opts := testnet.Options{Nodes: nodes, Dir: t.TempDir(), Seed: seed, Now: clock.Now}
	opts.Index.RegionBits = 16
	opts.Balance = node.BalanceConfig{Params: loadbalance.Params{CoolDown: 60_000, MinMoveInterval: 60_000}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { net.Close() })
	return net, clock
}

func submitN(t testing.TB, net *testnet.Network, n int, keywords []string) *project.Project {
	t.Helper()
	ctx := context.Background()
	p, err := net.NewProject(ctx, "lhc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Agent().Close() })
	for start := 0; start < n; start += 2000 {
		var prepared []*project.Prepared
		for i := start; i < min(start+2000, n); i++ {
			kw := keywords
			if kw == nil {
				kw = []string{fmt.Sprintf("k%d", i%500)}
			}
			spec, err := p.NewSpec("noop", []string{fmt.Sprint(i)}, kw, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			prep, err := p.Sign(spec)
			if err != nil {
				t.Fatal(err)
			}
			prepared = append(prepared, prep)
		}
		for _, r := range p.Submit(ctx, prepared) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	net.FlushAll(ctx)
	return p
}

// entryStats returns the largest and mean index entries over the nodes
// holding any, and how many hold some.
func entryStats(net *testnet.Network) (maxN int, mean float64, holders int) {
	total := 0
	for _, nd := range net.Live() {
		if n := nd.Index().Len(); n > 0 {
			holders++
			total += n
			maxN = max(maxN, n)
		}
	}
	if holders > 0 {
		mean = float64(total) / float64(holders)
	}
	return maxN, mean, holders
}

// TestIndexLoadBalance: one keyword with 20,000 entries on 64 nodes: all on
// one node at first; with balancing the largest holder falls below 3× the
// mean of the region's holders within a bounded number of periods.
func TestIndexLoadBalance(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 jobs and a few dozen moves")
	}
	start := time.Now()
	net, clock := lbNet(t, 64, 81)
	submitN(t, net, 20000, []string{"lhc"})
	maxN, mean, holders := entryStats(net)
	t.Logf("before balancing (%s to set up): max %d, mean %.0f over %d holders", time.Since(start).Round(time.Second), maxN, mean, holders)
	start = time.Now()
	if holders != 1 || maxN != 20000 {
		t.Fatalf("without balancing %d nodes hold entries (max %d), want one holding all", holders, maxN)
	}
	ctx := context.Background()
	moves := 0
	for period := 1; period <= 30; period++ {
		clock.Advance(2 * time.Minute)
		net.WriteAll(ctx) // rewrites keep entries alive and follow redirects
		m := net.BalanceAll(ctx)
		moves += m
		maxN, mean, holders = entryStats(net)
		t.Logf("period %2d: %2d moves, max %5d, mean %6.0f over %2d holders (max/mean %.1f)", period, m, maxN, mean, holders, float64(maxN)/mean)
		if holders >= 8 && float64(maxN) < 3*mean {
			t.Logf("balanced after %d periods and %d moves (%s)", period, moves, time.Since(start).Round(time.Second))
			return
		}
	}
	t.Fatalf("after 30 periods the largest holder has %d entries, mean %.0f over %d holders", maxN, mean, holders)
}

// TestJobLoadBalance: 64 nodes, 20,000 jobs: max/mean jobs per node (as
// the closest) falls from its unbalanced value.
func TestJobLoadBalance(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 jobs")
	}
	net, clock := lbNet(t, 64, 82)
	// Keywords spread over many regions: the job load is what is uneven.
	submitN(t, net, 20000, nil)
	ratio := func() float64 {
		var counts []int
		total := 0
		for _, nd := range net.Live() {
			_, c := nd.Pool().Counts()
			counts = append(counts, c)
			total += c
		}
		return float64(slices.Max(counts)) / (float64(total) / float64(len(counts)))
	}
	before := ratio()
	ctx := context.Background()
	moves := 0
	for range 5 {
		clock.Advance(2 * time.Minute)
		moves += net.BalanceAll(ctx)
	}
	net.RepublishAll(ctx)
	after := ratio()
	t.Logf("max/mean jobs per node: %.2f unbalanced, %.2f after 5 periods (%d moves)", before, after, moves)
	if after >= before {
		t.Fatalf("balancing did not even out jobs: %.2f → %.2f", before, after)
	}
}

// TestPiggybackedLoadMoves: with probes too rare to fire, a hot index node
// is still split: its replies to the writers' rewrites carry its load, and
// a much lighter writer reacts by moving next to it.
func TestPiggybackedLoadMoves(t *testing.T) {
	clock := testnet.NewClock(lbEpoch)
	opts := testnet.Options{Nodes: 16, Dir: t.TempDir(), Seed: 84, Now: clock.Now}
	opts.Index.RegionBits = 16                                    // one node holds the keyword's entries until a move
	opts.Balance = node.BalanceConfig{Interval: 1000 * time.Hour, // automatic balancing on; no probe fires during the test
		Params: loadbalance.Params{CoolDown: 60_000, MinMoveInterval: 60_000}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	submitN(t, net, 2000, []string{"lhc"})
	// Entries placed while a writer's routing table was still filling may
	// sit on a node that is not the region's closest (a slow -race run
	// found 4 holders); rewrites redirect them to the closest. The clock
	// stands still, so no cool-down passes and nothing moves meanwhile.
	var maxN, holders int
	for range 5 {
		if maxN, _, holders = entryStats(net); holders == 1 {
			break
		}
		net.WriteAll(ctx)
	}
	if holders != 1 {
		t.Fatalf("after submitting and rewriting, %d nodes hold entries (max %d), want one", holders, maxN)
	}
	moves, reactions := 0, 0
	for period := 1; period <= 5 && moves == 0; period++ {
		clock.Advance(2 * time.Minute) // past the cool-down; the load reports age
		net.WriteAll(ctx)              // rewrites: the hot node's replies carry its load
		for _, nd := range net.Live() {
			nd.WaitBalance()
		}
		moves, reactions = 0, 0
		for _, nd := range net.Live() {
			moves += nd.Moves()
			reactions += nd.Reactions()
		}
	}
	maxN, mean, holders := entryStats(net)
	t.Logf("%d reactions, %d moves: max %d, mean %.0f over %d holders", reactions, moves, maxN, mean, holders)
	if reactions == 0 || moves == 0 {
		t.Fatalf("no move on piggy-backed load (%d reactions, %d moves)", reactions, moves)
	}
	if holders < 2 || maxN >= 2000 {
		t.Fatalf("the hot node still holds %d of 2000 entries (%d holders)", maxN, holders)
	}
}

// TestMaxGrindBits: a node does not move to a split deeper than it is
// willing to grind for; it says why.
func TestMaxGrindBits(t *testing.T) {
	clock := testnet.NewClock(lbEpoch)
	opts := testnet.Options{Nodes: 8, Dir: t.TempDir(), Seed: 85, Now: clock.Now}
	opts.Balance = node.BalanceConfig{MaxGrindBits: 1, Params: loadbalance.Params{CoolDown: 60_000, MinMoveInterval: 60_000}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	submitN(t, net, 500, []string{"lhc"})
	clock.Advance(2 * time.Minute)
	var hot *node.Node
	for _, nd := range net.Live() {
		if nd.Index().Len() > 0 {
			hot = nd
		}
	}
	refused := 0
	for _, nd := range net.Live() {
		if nd == hot {
			continue
		}
		d, err := nd.BalanceWith(ctx, hot.ID())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(d.Reason, "deeper than 1 to grind") {
			refused++
		}
	}
	for _, nd := range net.Live() {
		if nd.Moves() != 0 {
			t.Fatalf("node %s moved", nd.Name())
		}
	}
	if refused == 0 {
		t.Fatal("no node refused the deep split")
	}
}
