package node_test

import (
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
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
