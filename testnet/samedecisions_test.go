package testnet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/claim"
	"github.com/up-pool/up/claimclient"
	"github.com/up-pool/up/claimnet"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/testnet/sim"
	"github.com/up-pool/up/wire"
)

// scriptStep is one step of a claim script: a client claims the job, or
// gives back the claim it won.
type scriptStep struct {
	op     string // "claim" or "release"
	client string
}

// claimScripts are the scenarios run through the simulator and through
// real nodes: one job on five nodes, the nodes at the deny ranks denying
// every claim (up to f = 1, and two beyond it), the nodes at the clocks
// ranks with their clocks set off true time (the clients' are true).
var claimScripts = []struct {
	name   string
	deny   []int
	steps  []scriptStep
	clocks map[int]time.Duration
}{
	{"race, honest replicas", nil,
		[]scriptStep{{"claim", "a"}, {"claim", "b"}, {"release", "a"}, {"claim", "b"}, {"claim", "a"}}, nil},
	{"race, the third closest denies", []int{2},
		[]scriptStep{{"claim", "a"}, {"claim", "b"}, {"release", "a"}, {"claim", "b"}}, nil},
	{"the closest denies", []int{0},
		[]scriptStep{{"claim", "a"}, {"release", "a"}, {"claim", "a"}}, nil},
	{"two deny, beyond f", []int{1, 3},
		[]scriptStep{{"claim", "a"}, {"claim", "b"}}, nil},
	{"three deny: no quorum", []int{0, 1, 2},
		[]scriptStep{{"claim", "a"}}, nil},
	{"clocks 9 min fast and slow, within T_skew", nil,
		[]scriptStep{{"claim", "a"}, {"claim", "b"}, {"release", "a"}, {"claim", "b"}},
		map[int]time.Duration{0: 9 * time.Minute, 3: -9 * time.Minute}},
	{"the closest's clock jumped an hour ahead", nil,
		[]scriptStep{{"claim", "a"}, {"release", "a"}, {"claim", "b"}},
		map[int]time.Duration{0: time.Hour}},
	{"two clocks an hour ahead, beyond f", nil,
		[]scriptStep{{"claim", "a"}},
		map[int]time.Duration{1: time.Hour, 4: time.Hour}},
	{"a jumped clock beside a denier, beyond f", []int{2},
		[]scriptStep{{"claim", "a"}},
		map[int]time.Duration{0: time.Hour}},
}

// TestSimAndNodesDecideAlike runs each claim script through the
// simulator (sim.Script) and through five real nodes on mocknet with real
// clients (claimclient), and checks that every claim ends alike and with
// the grants and accepted confirms of the same nodes (by rank of
// closeness to the job), with denying replicas and with clocks skewed
// within T_skew and jumped beyond it: the simulator and the nodes step
// the same claim machines (claim.Driver on the client, claim.Server on
// the nodes, each on its own clock), so its decisions are theirs.
func TestSimAndNodesDecideAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network per script")
	}
	for i, sc := range claimScripts {
		t.Run(sc.name, func(t *testing.T) {
			simmed := runSimScript(t, uint64(i+1), sc.deny, sc.clocks, sc.steps)
			real := runNodeScript(t, uint64(i+1), sc.deny, sc.clocks, sc.steps)
			if !slices.Equal(simmed, real) {
				t.Fatalf("decisions differ:\n simulator %v\n nodes     %v", simmed, real)
			}
			t.Logf("%v", real)
		})
	}
}

// TestSimAndNodesDecideAlikeControl is the negative control: the same
// steps, with the third closest node denying in the simulator only, give
// different decisions, and the comparison above would report them.
func TestSimAndNodesDecideAlikeControl(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	steps := []scriptStep{{"claim", "a"}, {"claim", "b"}}
	simmed := runSimScript(t, 9, []int{2}, nil, steps)
	real := runNodeScript(t, 9, nil, nil, steps)
	if slices.Equal(simmed, real) {
		t.Fatalf("a denying node in the simulator only changed no decision: %v", real)
	}
}

// TestSimAndNodesDecideAlikeClockControl is the negative control for
// clocks: the closest's clock jumped an hour in the simulator only changes
// which nodes accept the confirm.
func TestSimAndNodesDecideAlikeClockControl(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	steps := []scriptStep{{"claim", "a"}}
	simmed := runSimScript(t, 9, nil, map[int]time.Duration{0: time.Hour}, steps)
	real := runNodeScript(t, 9, nil, nil, steps)
	if slices.Equal(simmed, real) {
		t.Fatalf("a jumped clock in the simulator only changed no decision: %v", real)
	}
}

// runSimScript runs steps through the simulator and returns one line per
// claim: its outcome and the ranks that granted.
func runSimScript(t *testing.T, seed uint64, deny []int, clocks map[int]time.Duration, steps []scriptStep) []string {
	t.Helper()
	sc, err := sim.NewScript(16, seed, deny...)
	if err != nil {
		t.Fatal(err)
	}
	for k, d := range clocks {
		if err := sc.SkewClock(k, d); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, st := range steps {
		switch st.op {
		case "claim":
			c := sc.Claim(st.client)
			out = append(out, decision(st.client, c.Outcome, c.Granted, c.Accepted))
		case "release":
			if err := sc.Release(st.client); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// runNodeScript runs steps through five real nodes holding one job, the
// nodes at the deny ranks denying every claim (as the adversarial runs'
// "deny" behaviour), with one real claimer per client.
func runNodeScript(t *testing.T, seed uint64, deny []int, clocks map[int]time.Duration, steps []scriptStep) []string {
	t.Helper()
	f := StartFixture(t, nil, Options{Nodes: 5, Seed: seed})
	key := SubmitJobs(t, f.Project, 1, Jobs{})[0]
	ranked := make([]peer.ID, 0, 5)
	for _, nd := range f.Net.Live() {
		ranked = append(ranked, nd.ID())
	}
	dht.SortPeers(keyspace.KeyPos(key), ranked)
	for _, k := range deny {
		denyClaims(f.Net.Node(f.Net.Index(ranked[k])), f.Clock.Now)
	}
	for k, d := range clocks {
		f.Net.SetClockOffset(f.Net.Index(ranked[k]), d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	claimers, won := map[string]*claimclient.Claimer{}, map[string]*claimclient.Claim{}
	var out []string
	for _, st := range steps {
		cl := claimers[st.client]
		if cl == nil {
			a, err := f.Net.NewAgent(ctx, certs.RoleClient, st.client)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			cl = claimclient.NewClaimer(a.Endpoint(), a.DHT(), f.Clock.Now, 0)
			claimers[st.client] = cl
		}
		switch st.op {
		case "claim":
			before := countsBy(f.Net, ranked)
			c, err := cl.Claim(ctx, key)
			after := countsBy(f.Net, ranked)
			var granted, accepted []int // read from the nodes' own counts of the grants they sent and confirms they accepted
			for k := range ranked {
				if after[k].Granted > before[k].Granted {
					granted = append(granted, k)
				}
				if after[k].Claimed > before[k].Claimed {
					accepted = append(accepted, k)
				}
			}
			out = append(out, decision(st.client, outcomeOf(t, err), granted, accepted))
			if err == nil {
				won[st.client] = c
			}
		case "release":
			cl.Release(ctx, won[st.client], wire.SkipUnknown)
			delete(won, st.client)
		}
	}
	return out
}

// countsBy is each node's (by rank) count of the claim requests it
// granted and the confirms it accepted.
func countsBy(net *Network, ranked []peer.ID) []claimnet.Counts {
	out := make([]claimnet.Counts, len(ranked))
	for k, p := range ranked {
		out[k] = net.Node(net.Index(p)).Claims().Counts()
	}
	return out
}

// outcomeOf maps a claimer's result to the driver's outcome.
func outcomeOf(t *testing.T, err error) claim.Outcome {
	switch {
	case err == nil:
		return claim.Won
	case errors.Is(err, claimclient.ErrLost):
		return claim.Lost
	case errors.Is(err, claimclient.ErrUnknown):
		return claim.Unknown
	case errors.Is(err, claimclient.ErrNoQuorum):
		return claim.Failed
	}
	t.Fatalf("claim: %v", err)
	return claim.Pending
}

func decision(client string, out claim.Outcome, granted, accepted []int) string {
	g, a := slices.Clone(granted), slices.Clone(accepted)
	slices.Sort(g)
	slices.Sort(a)
	return fmt.Sprintf("%s %s granted %v accepted %v", client, out, g, a)
}
