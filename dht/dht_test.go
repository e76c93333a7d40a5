package dht_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestLookupCache: a second lookup of a key is answered from the cache
// without an RPC until the TTL passes on the injected clock; Invalidate
// forgets the answer at once; ClosestPeers and ClosestN share the entry.
func TestLookupCache(t *testing.T) {
	clock := testnet.NewClock(time.Now())
	const ttl = 90 * time.Second
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 8, Seed: 11, Now: clock.Now, DHT: dht.Config{LookupCacheTTL: ttl}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := net.Node(0).DHT()
	key := []byte("cache-key")
	lookup := func(what string, wantNetwork bool) {
		t.Helper()
		before := d.Stats()
		got, err := d.ClosestPeers(ctx, key)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want := net.TrueClosest(key, d.Replication()); !slices.Equal(got, want) {
			t.Fatalf("%s: closest %v, want %v", what, got, want)
		}
		after := d.Stats()
		network, rpcs, cached := after.Network-before.Network, after.RPCs-before.RPCs, after.Cached-before.Cached
		switch {
		case wantNetwork && (network != 1 || rpcs == 0 || cached != 0):
			t.Fatalf("%s: want a network lookup, got network %d, rpcs %d, cached %d", what, network, rpcs, cached)
		case !wantNetwork && (network != 0 || rpcs != 0 || cached != 1):
			t.Fatalf("%s: want a cache hit, got network %d, rpcs %d, cached %d", what, network, rpcs, cached)
		}
	}
	lookup("first lookup", true)
	lookup("second lookup", false)
	clock.Advance(ttl - time.Second)
	lookup("lookup just before the TTL", false)
	if got, err := d.ClosestN(ctx, key, 2); err != nil || len(got) != 2 || d.Stats().Network != 1 {
		t.Fatalf("ClosestN(2) from the cache: %v %v, %d network lookups", got, err, d.Stats().Network)
	}
	clock.Advance(time.Second)
	lookup("lookup at the TTL", true)
	lookup("lookup after refreshing", false)
	d.Invalidate(key)
	lookup("lookup after Invalidate", true)
	d.Invalidate([]byte("never looked up")) // harmless
	lookup("lookup after invalidating another key", false)
}

// TestLookupCacheOff: DisableLookupCache turns the cache off, so every lookup
// goes to the network.
func TestLookupCacheOff(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 4, Seed: 12, DHT: dht.Config{DisableLookupCache: true}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := net.Node(1).DHT()
	for range 3 {
		if _, err := d.ClosestPeers(ctx, []byte("k")); err != nil {
			t.Fatal(err)
		}
	}
	if st := d.Stats(); st.Network != 3 || st.Cached != 0 {
		t.Fatalf("stats %+v, want 3 network lookups and no cache hit", st)
	}
}

// TestNear: /up/near answers the asked node's n nearest known peers,
// itself included, to a raw position, nearest first. Every routing table
// holds every node, so the answer must equal the truth computed from all
// nodes' positions, whoever is asked.
func TestNear(t *testing.T) {
	const nodes = 12
	net := testnet.StartNetwork(t, testnet.Options{Nodes: nodes, Seed: 13})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	live := net.Live()
	var all []peer.ID
	for _, nd := range live {
		all = append(all, nd.ID())
		if n := nd.DHT().RoutingTableSize(); n != nodes-1 {
			t.Fatalf("%s has %d peers in its routing table, want %d", nd.Name(), n, nodes-1)
		}
	}
	truth := func(pos keyspace.Pos, n int) []peer.ID {
		ps := slices.Clone(all)
		slices.SortFunc(ps, func(a, b peer.ID) int {
			return keyspace.Compare(keyspace.Distance(keyspace.PeerPos([]byte(a)), pos), keyspace.Distance(keyspace.PeerPos([]byte(b)), pos))
		})
		return ps[:min(n, len(ps))]
	}
	rng := rand.New(rand.NewPCG(13, 14))
	asker := live[0].DHT()
	var targets []keyspace.Pos
	for range 8 {
		targets = append(targets, keyspace.NewRegion(keyspace.Pos{}, 0).RandomPoint(rng))
	}
	// Positions of nodes themselves, and one that shares a long prefix.
	targets = append(targets, keyspace.PeerPos([]byte(live[3].ID())), keyspace.PeerPos([]byte(live[5].ID())).FlipBit(255))
	for ti, pos := range targets {
		for _, nd := range live[1:] {
			for _, n := range []int{1, 3, nodes + 5} {
				got, err := asker.Near(ctx, nd.ID(), pos, n)
				if err != nil {
					t.Fatalf("near from %s: %v", nd.Name(), err)
				}
				if want := truth(pos, n); !slices.Equal(got, want) {
					t.Fatalf("target %d, %s asked for %d: got %v, want %v", ti, nd.Name(), n, got, want)
				}
			}
		}
	}
	for _, n := range []int{0, wire.MaxNearCount + 1} {
		if _, err := asker.Near(ctx, live[1].ID(), targets[0], n); err == nil {
			t.Fatalf("near with count %d accepted", n)
		}
	}
}

// TestNearLocalView: with routing tables that hold only part of the
// network, /up/near answers from the asked node's own view: its routing
// table and itself, not the whole network.
func TestNearLocalView(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 10, Seed: 15})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	asker, asked := net.Node(0), net.Node(1)
	// The asked node forgets all but three peers (the asker among them).
	rt := asked.DHT().Kad().RoutingTable()
	keep := map[peer.ID]bool{asker.ID(): true, net.Node(2).ID(): true, net.Node(3).ID(): true}
	for _, p := range rt.ListPeers() {
		if !keep[p] {
			rt.RemovePeer(p)
		}
	}
	view := []peer.ID{asked.ID()}
	for p := range keep {
		view = append(view, p)
	}
	for i := range 5 {
		pos := keyspace.KeyPos(fmt.Appendf(nil, "near-%d", i))
		want := slices.Clone(view)
		dht.SortPeers(pos, want)
		got, err := asker.DHT().Near(ctx, asked.ID(), pos, 10)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("near %d: got %v, want the asked node's view %v", i, got, want)
		}
	}
}

// TestSweepRemovesUnadmitted: a peer in the routing table that is not an
// admitted node (kad-dht added it from its queue after its drop) is swept
// out; admitted nodes stay.
func TestSweepRemovesUnadmitted(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 4, Seed: 12})
	d := net.Node(0).DHT()
	stranger := peer.ID("not a node of this overlay")
	if ok, _ := d.AddToRoutingTable(stranger); !ok {
		t.Fatal("could not put the stranger in the routing table")
	}
	before := len(d.RoutingTablePeers())
	if n := d.SweepRoutingTable(); n != 1 {
		t.Fatalf("sweep removed %d peers, want 1", n)
	}
	after := d.RoutingTablePeers()
	if slices.Contains(after, stranger) || len(after) != before-1 {
		t.Fatalf("after the sweep: %v (before %d peers)", after, before)
	}
}

// TestNearestUnmarked: the view a node judges a confirm by leaves out the
// peers it marked dead and stands the next nearest in, self always
// included; NearestLocal (the negative control) still names the dead.
func TestNearestUnmarked(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 10, Seed: 16})
	d := net.Node(0).DHT()
	pos := keyspace.KeyPos([]byte("unmarked"))
	all := d.NearestLocal(pos, 10)
	var dead []peer.ID
	for _, p := range all[:4] {
		if p != net.Node(0).ID() && len(dead) < 2 {
			dead = append(dead, p)
			d.MarkDead(p)
		}
	}
	got := d.NearestUnmarked(pos, 5)
	want := slices.DeleteFunc(slices.Clone(all), func(p peer.ID) bool { return slices.Contains(dead, p) })[:5]
	if !slices.Equal(got, want) {
		t.Fatalf("NearestUnmarked = %v, want %v (dead %v)", got, want, dead)
	}
	if local := d.NearestLocal(pos, 5); !slices.Contains(local, dead[0]) {
		t.Fatalf("NearestLocal %v leaves out %v: the control cannot tell", local, dead[0])
	}
	if got := d.NearestUnmarked(pos, 20); len(got) != len(all)-len(dead) {
		t.Fatalf("NearestUnmarked of more than known: %d peers, want %d", len(got), len(all)-len(dead))
	}
}

// TestProberTakesHeardPeersAlive: a peer that answered a request a moment
// ago counts as alive in a probe round without a ping; one not heard from
// is pinged; with AlwaysProbe (the control) every peer is pinged.
func TestProberTakesHeardPeersAlive(t *testing.T) {
	for _, always := range []bool{false, true} {
		net := testnet.StartNetwork(t, testnet.Options{Nodes: 4, Seed: 17, DHT: dht.Config{AlwaysProbe: always}})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		a, b, c := net.Node(0), net.Node(1), net.Node(2)
		if err := a.Endpoint().Ping(ctx, b.ID()); err != nil {
			t.Fatal(err)
		}
		pr := a.DHT().NewProber()
		if !pr.Alive(ctx, b.ID()) {
			t.Fatalf("always %v: a peer that just answered is not alive", always)
		}
		heardB := pr.Heard()
		cid := c.ID()
		if err := net.Kill(2); err != nil {
			t.Fatal(err)
		}
		if pr.Alive(ctx, cid) {
			t.Fatalf("always %v: a killed peer counts as alive", always)
		}
		cancel()
		switch {
		case !always && heardB != 1:
			t.Fatalf("the peer heard from was pinged (heard %d)", heardB)
		case always && pr.Heard() != 0:
			t.Fatalf("AlwaysProbe took %d peers as heard", pr.Heard())
		}
	}
}

// TestNearestLiveManyIsNearestLive: the views ranked once per run of
// positions no peer tells apart are those NearestLive gives each position
// alone, dead peers included; positions that share a long prefix (a
// node's held jobs) share views. Control: a depth one bit short gives
// some position another view.
func TestNearestLiveManyIsNearestLive(t *testing.T) {
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 12, Seed: 23})
	ctx := context.Background()
	d := net.Node(0).DHT()
	if err := net.Kill(5); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 1))
	poss := make([]keyspace.Pos, 3000)
	for i := range poss {
		for j := range poss[i] {
			poss[i][j] = byte(rng.Uint32())
		}
		if i%2 == 1 { // a neighbour of the last: a shared long prefix
			poss[i] = poss[i-1]
			poss[i][31] ^= byte(i)
		}
	}
	views := d.NewProber().NearestLiveMany(ctx, poss, 5)
	alone := d.NewProber()
	shared := 0
	for i, pos := range poss {
		want := alone.NearestLive(ctx, pos, 5)
		if !slices.Equal(views[i], want) {
			t.Fatalf("position %d: view %v, alone %v", i, views[i], want)
		}
		if i%2 == 1 && &views[i][0] == &views[i-1][0] {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("no view was shared by positions that agree on 248 bits")
	}
	// Control: one bit short of the separating depth, two positions
	// agreeing on it can be ordered differently by the two peers that
	// share the longest prefix.
	depth := d.SeparatingDepth()
	if depth < 2 {
		t.Fatalf("separating depth %d with 12 nodes", depth)
	}
	differ := false
	for i := 0; i < 2000 && !differ; i++ {
		var a keyspace.Pos
		for j := range a {
			a[j] = byte(rng.Uint32())
		}
		b := a
		flip := depth - 1 // the bit that tells the closest pair apart
		b[flip/8] ^= 0x80 >> (flip % 8)
		differ = !slices.Equal(d.NearestLocal(a, 12), d.NearestLocal(b, 12))
	}
	if !differ {
		t.Fatal("positions differing only at the separating depth's last bit always rank alike: the depth is not tight")
	}
}
