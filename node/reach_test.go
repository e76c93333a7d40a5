package node_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
)

// TestClientModeNodeHoldsNoJob: a node whose DHT runs in client mode (as
// an unreachable node's does in auto mode) joins through real lookups but
// enters no routing table, so it is never among a job's holders, while
// the others hold every job.
func TestClientModeNodeHoldsNoJob(t *testing.T) {
	const client = 3
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 19, SlowBootstrap: true,
		Configure: func(i int, cfg *node.Config) {
			if i == client {
				cfg.DHT.Mode = dht.ModeClient
			}
		}})
	cl := f.Net.Node(client)
	if cl.DHT().IsServer() {
		t.Fatal("the client-mode node says it serves the DHT")
	}
	for i := 0; i < f.Net.Len(); i++ {
		if i != client && slices.Contains(f.Net.Node(i).DHT().RoutingTablePeers(), cl.ID()) {
			t.Fatalf("node %d has the client-mode node in its routing table", i)
		}
	}
	keys := testnet.SubmitJobs(t, f.Project, 24, testnet.Jobs{})
	for _, k := range keys {
		holders := f.Net.Holders(k)
		if len(holders) == 0 {
			t.Fatalf("job %x held nowhere", k)
		}
		if slices.Contains(holders, client) {
			t.Fatalf("job %x held by the client-mode node (holders %v)", k, holders)
		}
	}
	if n := cl.Pool().Len(); n != 0 {
		t.Fatalf("the client-mode node holds %d jobs", n)
	}
}

// TestAutoModeFollowsReachability: a node in auto mode serves the DHT
// only once the host reports it publicly reachable, stops when it reports
// it private, and its status says so.
func TestAutoModeFollowsReachability(t *testing.T) {
	const auto = 1
	net := testnet.StartNetwork(t, testnet.Options{Nodes: 4, Seed: 23,
		Configure: func(i int, cfg *node.Config) {
			if i == auto {
				cfg.DHT.Mode = dht.ModeAuto
			}
		}})
	nd := net.Node(auto)
	st := nd.Status()
	if st.DHTServer || st.DHTMode != "auto" || st.Reachability.Reachability != "unknown" {
		t.Fatalf("at start: dht server %v, mode %s, reachability %+v; want a client in auto mode, reachability unknown",
			st.DHTServer, st.DHTMode, st.Reachability)
	}
	em, err := nd.Endpoint().Raw().EventBus().Emitter(new(event.EvtLocalReachabilityChanged))
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	for _, step := range []struct {
		r      network.Reachability
		name   string
		server bool
	}{{network.ReachabilityPublic, "public", true}, {network.ReachabilityPrivate, "private", false}} {
		if err := em.Emit(event.EvtLocalReachabilityChanged{Reachability: step.r}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			st = nd.Status()
			if st.DHTServer == step.server && st.Reachability.Reachability == step.name {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s: dht server %v, reachability %+v", step.name, st.DHTServer, st.Reachability)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if st.Reachability.Summary() != "behind NAT" || st.Reachability.Why == "" {
		t.Fatalf("status %+v (summary %q)", st.Reachability, st.Reachability.Summary())
	}
}

// TestNodeTurningClientKeepsJobsServed: a node in auto mode that was
// public holds jobs; AutoNAT then finds it private (its router changed,
// its port mapping lapsed). It turns DHT client, the others drop it from
// the routing tables of the nodes connected to it, and one republish
// round restores r copies of every job it held among the nodes still
// serving, so no job depends on the node nobody can dial any more.
func TestNodeTurningClientKeepsJobsServed(t *testing.T) {
	const turner, r = 2, 5
	f := testnet.StartFixture(t, nil, testnet.Options{Nodes: 8, Seed: 29,
		Configure: func(i int, cfg *node.Config) {
			if i == turner {
				cfg.DHT.Mode = dht.ModeAuto
			}
		}})
	nd := f.Net.Node(turner)
	em, err := nd.Endpoint().Raw().EventBus().Emitter(new(event.EvtLocalReachabilityChanged))
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	setReach := func(r network.Reachability, server bool) {
		t.Helper()
		if err := em.Emit(event.EvtLocalReachabilityChanged{Reachability: r}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "the node's DHT mode to follow its reachability", func() bool {
			return nd.DHT().IsServer() == server
		})
		if !testkit.Poll(10*time.Second, func() bool { return inTables(f.Net, turner, server) == server }) {
			t.Fatalf("the others' routing tables do not follow the node's DHT mode (server %v); each other node connected / has it: %v", server, connectedTo(f.Net, turner))
		}
	}
	setReach(network.ReachabilityPublic, true)
	keys := testnet.SubmitJobs(t, f.Project, 24, testnet.Jobs{})
	var held [][]byte
	for _, k := range keys {
		if slices.Contains(f.Net.Holders(k), turner) {
			held = append(held, k)
		}
	}
	if len(held) == 0 {
		t.Fatal("the node holds none of the jobs: nothing to test")
	}
	setReach(network.ReachabilityPrivate, false)
	f.Net.RepublishAll(context.Background())
	for _, k := range held {
		serving := slices.DeleteFunc(f.Net.Holders(k), func(i int) bool { return i == turner })
		if len(serving) < r {
			t.Errorf("job %x held by %d serving nodes after the holder turned client (holders %v), want %d", k, len(serving), f.Net.Holders(k), r)
		}
	}
	t.Logf("%d of %d jobs were held by the node that turned client; each has %d copies on serving nodes", len(held), len(keys), r)
}

// inTables reports, for server true, whether some other node has node i
// in its routing table; for server false, whether a node connected to i
// still has it. A node not connected to i learns nothing of its mode
// change until it next contacts it (identify then tells it; behind NAT the
// dial fails and the node is marked dead), so its table may keep i until
// then.
func inTables(n *testnet.Network, i int, server bool) bool {
	id := n.Node(i).ID()
	for k := 0; k < n.Len(); k++ {
		if k == i || !slices.Contains(n.Node(k).DHT().RoutingTablePeers(), id) {
			continue
		}
		if server || n.Node(k).Endpoint().Raw().Network().Connectedness(id) == network.Connected {
			return true
		}
	}
	return false
}

// connectedTo lists, for each other node, whether it has a connection to
// node i and i in its routing table.
func connectedTo(n *testnet.Network, i int) []string {
	id := n.Node(i).ID()
	var out []string
	for k := 0; k < n.Len(); k++ {
		if k != i {
			out = append(out, fmt.Sprintf("%d:%v/%v", k, n.Node(k).Endpoint().Raw().Network().Connectedness(id) == network.Connected,
				slices.Contains(n.Node(k).DHT().RoutingTablePeers(), id)))
		}
	}
	return out
}
