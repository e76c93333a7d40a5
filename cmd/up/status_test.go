package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/node"
)

// fakeAPI serves doc as JSON at /status, as a node's or client's HTTP API
// does, and 404 elsewhere; it returns the server's host:port.
func fakeAPI(t *testing.T, doc any) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

var (
	fakeNode = node.Status{Role: "node", Name: "n1", PeerID: "12D3KooWfake", Position: "0xabc", Uptime: 61,
		Addrs: []string{"/ip4/127.0.0.1/tcp/4101/p2p/12D3KooWfake"}, RoutingTable: 4, JobsHeld: 7,
		Neighbours: []node.Neighbour{{PeerID: "12D3KooWother", Position: "0xabd", CommonPrefix: 9}}}
	fakeClient = client.Status{Role: "client", Done: 3, Failed: 1, Released: 2,
		Debts: map[string]float64{"lhc": 1.5}, Backoff: map[string]float64{"lhc": 4},
		ClaimP50: 0.012, ClaimP99: 0.051, ClaimsTimed: 37}
)

// TestStatusWrongRole: a status command pointed at the other kind of
// party's API, or at something that is not a U.P. API, fails with exit 1
// and one line saying what answered, where it printed zeros and exited 0.
func TestStatusWrongRole(t *testing.T) {
	nodeAddr, clientAddr := fakeAPI(t, fakeNode), fakeAPI(t, fakeClient)
	other := fakeAPI(t, map[string]int{"done": 5})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "status", "--http", clientAddr}, "a client answered, not a node (try 'up client status')"},
		{[]string{"client", "status", "--http", nodeAddr}, "a node answered, not a client (try 'up node status')"},
		{[]string{"node", "status", "--http", other}, "not a U.P. status document"},
		{[]string{"client", "status", "--http", other, "--json"}, "not a U.P. status document"},
	} {
		code, out, errs := upRun(t, c.args...)
		if code != 1 || out != "" || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("up %s: exit %d, stdout %q, stderr %q; want exit 1 and one line saying %q",
				strings.Join(c.args, " "), code, out, errs, c.want)
		}
	}
}

// TestStatusURLForms: --http takes host:port or an http:// URL with or
// without a trailing slash.
func TestStatusURLForms(t *testing.T) {
	addr := fakeAPI(t, fakeNode)
	for _, v := range []string{addr, "http://" + addr, "http://" + addr + "/"} {
		out := mustRun(t, "node", "status", "--json", "--http", v)
		var st node.Status
		if err := json.Unmarshal([]byte(out), &st); err != nil || st.PeerID != fakeNode.PeerID {
			t.Errorf("--http %s: %v, status %+v", v, err, st)
		}
	}
}

// TestStatusText: node and client status print a readable summary by
// default (the node's addresses with their /p2p part, one per line, for
// scripts to grep) and JSON with snake_case keys with --json.
func TestStatusText(t *testing.T) {
	nodeAddr, clientAddr := fakeAPI(t, fakeNode), fakeAPI(t, fakeClient)
	out := mustRun(t, "node", "status", "--http", nodeAddr)
	for _, want := range []string{"peer ID        12D3KooWfake", "uptime         1m1s", "jobs held      7",
		"/ip4/127.0.0.1/tcp/4101/p2p/12D3KooWfake\n", "12D3KooWother"} {
		if !strings.Contains(out, want) {
			t.Errorf("node status lacks %q:\n%s", want, out)
		}
	}
	out = mustRun(t, "client", "status", "--http", clientAddr)
	for _, want := range []string{"jobs: 3 done, 1 failed, 2 released, 0 running", "lhc", "+1.5 s", "4.0 s",
		"claim latency: p50 0.012 s, p99 0.051 s (last 37 claims)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("client status lacks %q:\n%s", want, out)
		}
	}
	snake := regexp.MustCompile(`"([^"]+)":`)
	for _, args := range [][]string{{"node", "status", "--http", nodeAddr, "--json"}, {"client", "status", "--http", clientAddr, "--json"}} {
		out := mustRun(t, args...)
		if !json.Valid([]byte(out)) {
			t.Fatalf("up %s: not JSON: %s", strings.Join(args, " "), out)
		}
		for _, m := range snake.FindAllStringSubmatch(out, -1) {
			if k := m[1]; k != "lhc" && !regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`).MatchString(k) {
				t.Errorf("up %s: key %q is not snake_case", strings.Join(args, " "), k)
			}
		}
	}
}

// TestClientStatusNoClaimLatency: a client that has timed no claim yet
// prints no claim latency line; one with a single claim says "claim".
func TestClientStatusNoClaimLatency(t *testing.T) {
	var b strings.Builder
	if err := printClientStatus(&b, client.Status{Role: "client"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "claim latency") {
		t.Errorf("no claim timed, yet:\n%s", b.String())
	}
	b.Reset()
	if err := printClientStatus(&b, client.Status{Role: "client", ClaimP50: 0.5, ClaimP99: 0.5, ClaimsTimed: 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "claim latency: p50 0.500 s, p99 0.500 s (last 1 claim)\n") {
		t.Errorf("one claim timed:\n%s", b.String())
	}
}
