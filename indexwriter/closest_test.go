package indexwriter_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet"
)

// TestClosestFuncMatchesNearestLocal: the writer's one-pass test of
// whether a node is the closest live node to a position answers as the
// walk over NearestLocal does, with no peer marked dead, many, and all.
func TestClosestFuncMatchesNearestLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 12, Dir: t.TempDir(), Seed: 61})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	rng := rand.New(rand.NewPCG(61, 1))
	check := func(round string) {
		closest := 0
		for i := range net.Live() {
			fast, ref := net.Node(i).Writer().ClosestTests()
			for range 400 {
				pos := randomPos(rng)
				want := ref(pos)
				if got := fast(pos); got != want {
					t.Fatalf("%s: node %d at %x: %v, NearestLocal says %v", round, i, pos[:4], got, want)
				}
				if want == 0 {
					closest++
				}
			}
		}
		if closest == 0 {
			t.Fatalf("%s: no node was ever closest", round)
		}
	}
	check("none dead")
	for i := range net.Live() {
		d := net.Node(i).DHT()
		for j, p := range d.RoutingTablePeers() {
			if j%3 != 0 {
				d.MarkDead(p)
			}
		}
	}
	check("two in three dead")
	for i := range net.Live() {
		d := net.Node(i).DHT()
		for _, p := range d.RoutingTablePeers() {
			d.MarkDead(p)
		}
	}
	check("all dead") // closest only among the nearest eight
}

// TestProbedRankMatchesRank: a full round's one-pass rank, probing the
// nearer peers, answers as rank's walk over NearestLocal does, with every
// node up and with two of twelve killed (a probe that fails marks its
// peer dead for both). The cut-offs are the ones closestFunc's test
// checks with peers marked dead.
func TestProbedRankMatchesRank(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	net, err := testnet.Start(ctx, testnet.Options{Nodes: 12, Dir: t.TempDir(), Seed: 62})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	rng := rand.New(rand.NewPCG(62, 1))
	check := func(round string, skip map[int]bool) {
		counts := map[int]int{}
		for i := range 12 {
			if skip[i] {
				continue
			}
			fast, ref := net.Node(i).Writer().ProbedRankTests(ctx)
			for range 300 {
				pos := randomPos(rng)
				want := ref(pos)
				if got := fast(pos); got != want {
					t.Fatalf("%s: node %d at %x: rank %d, the walk over NearestLocal says %d", round, i, pos[:4], got, want)
				}
				counts[want]++
			}
		}
		if counts[0] == 0 || counts[1] == 0 || counts[-1] == 0 {
			t.Fatalf("%s: ranks seen %v: want 0, 1 and -1 among them", round, counts)
		}
	}
	check("all up", nil)
	for _, i := range []int{3, 7} {
		if err := net.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	check("two killed", map[int]bool{3: true, 7: true})
}

// randomPos is a uniformly random position drawn from rng.
func randomPos(rng *rand.Rand) keyspace.Pos {
	var pos keyspace.Pos
	for j := range pos {
		pos[j] = byte(rng.Uint32())
	}
	return pos
}
