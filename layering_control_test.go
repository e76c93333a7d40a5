package up_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// m is the full import path of a module package.
func m(relative string) string { return module + "/" + relative }

// cleanGraph is a small synthetic module that keeps every rule: each pure
// package imports exactly its allow-list, and the shells are wired the way
// the rules want.
func cleanGraph() importGraph {
	graph := importGraph{
		m("cmd/up"):           {m("node")},
		m("testnet"):          {m("node"), m("testnet/sim")},
		m("node"):             {m("balancenet"), m("claimnet"), m("indexnet"), m("overlay"), m("pool")},
		m("balancenet"):       {m("loadbalance"), m("overlay"), m("pool")},
		m("claimnet"):         {m("claim"), m("overlay")},
		m("indexnet"):         {m("index"), m("overlay")},
		m("indexclient"):      {m("index"), m("overlay")},
		m("pool"):             {m("job"), m("overlay"), m("store")},
		m("store"):            {"github.com/cockroachdb/pebble/v2"},
		m("overlay"):          {"github.com/libp2p/go-libp2p/core/host"},
		m("apps"):             {"fmt"},
		m("client"):           {m("client/sched"), m("job")},
		m("agent"):            {m("indexclient"), m("wire")},
		m("project"):          {m("agent"), m("result")},
		m("testnet/sim"):      {m("dht/keyspace"), m("index"), m("job"), m("loadbalance")},
		m("cadir"):            {m("certs"), m("keystore")},
		m("testnet/testkit"):  {"os", "testing", "time"},
		m("testnet/bench"):    {m("testnet"), m("client")},
		m("testnet/scenario"): {m("testnet"), m("testnet/sim")},
		m("testnet/demo"):     {m("testnet"), m("client")},
		m("sandbox"):          {"github.com/tetratelabs/wazero", m("apps")},
	}
	for _, p := range purePackages {
		graph[p.path] = slices.Clone(p.allowed)
	}
	return graph
}

// TestCheckLayeringCleanGraph: a graph that keeps every rule reports
// nothing, so the violations below come from the edges added to it.
func TestCheckLayeringCleanGraph(t *testing.T) {
	found := checkLayering(cleanGraph(), importGraph{}, layeringRules{pure: purePackages, deps: shellRules})
	for _, v := range found {
		t.Errorf("clean graph: %s: %s", v.key(), v.route())
	}
}

// TestCheckLayeringReportsForbiddenEdges is the negative control: each
// forbidden edge added to the clean graph is reported, with its chain,
// for the package that has it and every package that reaches it.
func TestCheckLayeringReportsForbiddenEdges(t *testing.T) {
	graph := cleanGraph()
	add := func(from string, imports ...string) { graph[from] = append(graph[from], imports...) }
	// A pure package imports the network; those that import it reach it.
	add(m("job"), "net")
	// A standard-library-only package imports outside it.
	add(m("dht/keyspace"), "github.com/google/btree")
	// overlay -> certs -> pool.
	add(m("overlay"), m("certs"))
	add(m("certs"), m("pool"))
	// node imported outside cmd/up and the harness.
	add(m("apps"), m("node"))
	// client -> claimnet -> pool -> store.
	add(m("client"), m("claimnet"))
	add(m("claimnet"), m("pool"))
	// The simulator reaches pebble (pool -> store) and libp2p (pool ->
	// overlay).
	add(m("testnet/sim"), m("pool"))
	// The tests' kit imports a package of the module.
	add(m("testnet/testkit"), m("overlay"))
	// The balancing controller reads the clock; a client links the
	// balancing shell; so does the simulator.
	add(m("loadbalance"), "time")
	add(m("client"), m("balancenet"))
	add(m("testnet/sim"), m("balancenet"))
	// The harness imports the bench.
	add(m("testnet"), m("testnet/bench"))
	// The sandbox links the overlay, and so libp2p.
	add(m("sandbox"), m("overlay"))
	// The blob protocols' caller side links the node's blob server.
	add(m("blobclient"), m("blobnet"))
	// A pure package's tests import outside their allow-list.
	testImports := importGraph{m("loadbalance"): {"net/http", "testing"}}

	want := []string{
		ruleOverlay + " | overlay | pool: overlay -> certs -> pool",
		ruleNode + " | apps | node: apps -> node",
		ruleClientSide + " | client | claimnet: client -> claimnet",
		ruleClientSide + " | client | pebble: client -> claimnet -> pool -> store -> github.com/cockroachdb/pebble/v2",
		ruleClientSide + " | client | balancenet: client -> balancenet",
		ruleClientSide + " | blobclient | blobnet: blobclient -> blobnet",
		ruleBalance + " | client | balancenet: client -> balancenet",
		ruleSimulator + " | testnet/sim | balancenet: testnet/sim -> balancenet",
		ruleBalance + " | testnet/sim | balancenet: testnet/sim -> balancenet",
		ruleHarness + " | testnet | testnet/bench, testnet/scenario, testnet/demo: testnet -> testnet/bench",
		ruleSandbox + " | sandbox | libp2p: sandbox -> overlay -> github.com/libp2p/go-libp2p/core/host",
		ruleSandbox + " | sandbox | this module but sandbox, apps: sandbox -> overlay",
		rulePureImports + " | loadbalance | time: loadbalance -> time",
		rulePureNever + " | loadbalance | time: loadbalance -> time",
		ruleClientSide + " | client | pool: client -> claimnet -> pool",
		ruleClientSide + " | client | store: client -> claimnet -> pool -> store",
		ruleClientSide + " | indexclient | pool: indexclient -> overlay -> certs -> pool",
		ruleClientSide + " | indexclient | store: indexclient -> overlay -> certs -> pool -> store",
		ruleClientSide + " | indexclient | pebble: indexclient -> overlay -> certs -> pool -> store -> github.com/cockroachdb/pebble/v2",
		ruleClientSide + " | agent | pool: agent -> indexclient -> overlay -> certs -> pool",
		ruleClientSide + " | agent | store: agent -> indexclient -> overlay -> certs -> pool -> store",
		ruleClientSide + " | agent | pebble: agent -> indexclient -> overlay -> certs -> pool -> store -> github.com/cockroachdb/pebble/v2",
		ruleClientSide + " | project | pool: project -> agent -> indexclient -> overlay -> certs -> pool",
		ruleClientSide + " | project | store: project -> agent -> indexclient -> overlay -> certs -> pool -> store",
		ruleClientSide + " | project | pebble: project -> agent -> indexclient -> overlay -> certs -> pool -> store -> github.com/cockroachdb/pebble/v2",
		ruleSimulator + " | testnet/sim | libp2p: testnet/sim -> pool -> overlay -> github.com/libp2p/go-libp2p/core/host",
		ruleSimulator + " | testnet/sim | pebble: testnet/sim -> pool -> store -> github.com/cockroachdb/pebble/v2",
		ruleCADir + " | cadir | overlay, dht, pool, store, node: cadir -> certs -> pool",
		ruleTestkit + " | testnet/testkit | outside the standard library: testnet/testkit -> overlay",
		rulePureImports + " | dht/keyspace | github.com/google/btree: dht/keyspace -> github.com/google/btree",
		rulePureImports + " | job | net: job -> net",
		rulePureNetwork + " | blob | net: blob -> job -> net",
		rulePureNetwork + " | claim | net: claim -> job -> net",
		rulePureNetwork + " | index | net: index -> job -> net",
		rulePureNetwork + " | job | net: job -> net",
		rulePureNetwork + " | replica | net: replica -> job -> net",
		rulePureNetwork + " | result | net: result -> job -> net",
		rulePureNetwork + " | wire | net: wire -> job -> net",
		rulePureNever + " | job | net: job -> net",
		rulePureStandard + " | dht/keyspace | outside the standard library: dht/keyspace -> github.com/google/btree",
		rulePureStandard + " | loadbalance | outside the standard library: loadbalance -> dht/keyspace -> github.com/google/btree",
		rulePureTests + " | loadbalance | net/http: loadbalance (tests) -> net/http",
	}
	found := checkLayering(graph, testImports, layeringRules{pure: purePackages, deps: shellRules})
	got := make([]string, len(found))
	for i, v := range found {
		got[i] = v.key() + ": " + v.route()
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestCheckLayeringReportsMissingPackages: a rule that names a package the
// graph does not hold is reported, not silently passed.
func TestCheckLayeringReportsMissingPackages(t *testing.T) {
	graph := cleanGraph()
	delete(graph, m("claim"))
	delete(graph, m("overlay"))
	found := checkLayering(graph, importGraph{}, layeringRules{pure: purePackages, deps: shellRules})
	var got []string
	for _, v := range found {
		got = append(got, v.key())
	}
	want := []string{
		ruleMissing + " | claim | not in the import graph",
		ruleMissing + " | overlay | no package for rule " + ruleOverlay,
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations %q, want %q", got, want)
	}
}

// TestRatchet: a violation that is not pending, a pending one whose chain
// changed and a pending one that no longer occurs are each a problem; a
// pending one as recorded is not.
func TestRatchet(t *testing.T) {
	found := []violation{
		{rule: ruleClientSide, pkg: m("client"), forbidden: "pool", chain: []string{m("client"), m("claimnet"), m("pool")}},
		{rule: ruleClientSide, pkg: m("agent"), forbidden: "pool", chain: []string{m("agent"), m("pool")}},
		{rule: ruleOverlay, pkg: m("overlay"), forbidden: "pool", chain: []string{m("overlay"), m("pool")}},
	}
	pending := []pendingViolation{
		{ruleClientSide, "client", "pool", "client -> claimnet -> pool"},
		{ruleClientSide, "agent", "pool", "agent -> indexnet -> pool"},
		{ruleSimulator, "testnet/sim", "pebble", "testnet/sim -> pool -> store -> github.com/cockroachdb/pebble/v2"},
	}
	problems, stillPending := ratchet(found, pending)
	if len(stillPending) != 1 || stillPending[0].route() != "client -> claimnet -> pool" {
		t.Errorf("still pending %v, want only client -> claimnet -> pool", stillPending)
	}
	wantProblems := map[string]string{
		"changed chain": "now goes agent -> pool (was agent -> indexnet -> pool)",
		"new violation": "overlay reaches pool: overlay -> pool",
		"gone pending":  "testnet/sim -> pool -> store -> github.com/cockroachdb/pebble/v2 (pebble) no longer occurs",
	}
	for _, what := range slices.Sorted(maps.Keys(wantProblems)) {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, wantProblems[what]) }) {
			t.Errorf("%s not reported; problems: %q", what, problems)
		}
	}
	if len(problems) != len(wantProblems) {
		t.Errorf("%d problems, want %d: %q", len(problems), len(wantProblems), problems)
	}
}
