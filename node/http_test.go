package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// get fetches url and returns the body of a 200 answer.
func get(t *testing.T, url string) []byte {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body
}

// metricValue finds the sample of series (name and labels, exactly as
// exposed) in a Prometheus text exposition.
func metricValue(body []byte, series string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestHTTPAPI: a node bound to 127.0.0.1:0 serves /status with its peer
// ID, position, routing-table size and nearest neighbours as computed from
// all nodes' positions, and /metrics with the RPC, lookup and connection
// metrics, counting what the test did.
func TestHTTPAPI(t *testing.T) {
	const nodes = 12
	tn, err := testnet.Start(context.Background(), testnet.Options{
		Nodes: nodes, Dir: t.TempDir(), Seed: 21,
		Configure: func(i int, cfg *node.Config) {
			if i == 0 {
				cfg.HTTPAddr = "127.0.0.1:0"
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	nd := tn.Node(0)
	addr := nd.HTTPAddr()
	if host, _, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" {
		t.Fatalf("HTTP API on %q, want 127.0.0.1", addr)
	}
	if tn.Node(1).HTTPAddr() != "" {
		t.Fatal("HTTP API on although not configured")
	}

	var st node.Status
	if err := json.Unmarshal(get(t, "http://"+addr+"/status"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Role != "node" || st.Uptime < 0 {
		t.Fatalf("status role %q, uptime %v s; want node, >= 0", st.Role, st.Uptime)
	}
	self := keyspace.PeerPos([]byte(nd.ID()))
	if st.PeerID != nd.ID().String() || st.Position != self.String() || st.Name != "node000" {
		t.Fatalf("status names %s %s at %s, want node000 %s at %s", st.Name, st.PeerID, st.Position, nd.ID(), self)
	}
	if st.RoutingTable != nodes-1 || st.RoutingTable != nd.DHT().RoutingTableSize() {
		t.Fatalf("status routing table %d, node's %d, want %d", st.RoutingTable, nd.DHT().RoutingTableSize(), nodes-1)
	}
	// Every routing table holds every node: the neighbours are the 8
	// nodes nearest to this one's position, nearest first.
	var others []peer.ID
	for _, o := range tn.Live()[1:] {
		others = append(others, o.ID())
	}
	slices.SortFunc(others, func(a, b peer.ID) int {
		return keyspace.Compare(keyspace.Distance(keyspace.PeerPos([]byte(a)), self), keyspace.Distance(keyspace.PeerPos([]byte(b)), self))
	})
	if len(st.Neighbours) != 8 {
		t.Fatalf("%d neighbours, want 8", len(st.Neighbours))
	}
	for i, nb := range st.Neighbours {
		pos := keyspace.PeerPos([]byte(others[i]))
		if nb.PeerID != others[i].String() || nb.Position != pos.String() || nb.CommonPrefix != keyspace.CommonPrefixLen(self, pos) {
			t.Fatalf("neighbour %d is %+v, want %s at %s sharing %d bits", i, nb, others[i], pos, keyspace.CommonPrefixLen(self, pos))
		}
	}

	// Traffic the metrics must count: two /up/near requests from node 1,
	// one network lookup and one cached one from node 0.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 2 {
		if _, err := tn.Node(1).DHT().Near(ctx, nd.ID(), self, 3); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := nd.DHT().ClosestPeers(ctx, []byte("metrics-key")); err != nil {
			t.Fatal(err)
		}
	}
	body := get(t, "http://"+addr+"/metrics")
	want := map[string]float64{
		fmt.Sprintf("up_rpc_received_total{protocol=%q,role=\"node\"}", wire.ProtoNear): 2,
		`up_lookups_total{source="network"}`:                                            1,
		`up_lookups_total{source="cache"}`:                                              1,
	}
	for series, v := range want {
		if got, ok := metricValue(body, series); !ok || got != v {
			t.Errorf("/metrics %s = %v (found %v), want %v", series, got, ok, v)
		}
	}
	if rpcs, ok := metricValue(body, "up_lookup_rpcs_total"); !ok || rpcs < 1 {
		t.Errorf("/metrics up_lookup_rpcs_total = %v (found %v), want at least 1", rpcs, ok)
	}
	if conns, ok := metricValue(body, "up_connections"); !ok || conns < 1 {
		t.Errorf("/metrics up_connections = %v (found %v), want at least 1", conns, ok)
	}
	if !strings.Contains(string(body), "up_build_info{") || !strings.Contains(string(body), `goversion="`+runtime.Version()+`"`) {
		t.Errorf("/metrics has no up_build_info with goversion %s", runtime.Version())
	}
	resp, err := http.Get("http://" + addr + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %s, want 404", resp.Status)
	}
}

// TestFailedFirstStartLeavesNoStore: a node whose first start fails (its
// HTTP port is taken) leaves no store behind; a later failure leaves the
// store of earlier runs alone.
func TestFailedFirstStartLeavesNoStore(t *testing.T) {
	tn, err := testnet.Start(context.Background(), testnet.Options{Nodes: 2, Dir: t.TempDir(), Seed: 22, Transport: testnet.TCP})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	id, err := tn.NewParty(certs.RoleNode, "late")
	if err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	storeDir := filepath.Join(id.Dir, "store")
	cfg := node.Config{
		DataDir:  id.Dir,
		Listen:   []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/0")},
		HTTPAddr: busy.Addr().String(),
		Logger:   slog.New(slog.DiscardHandler),
	}
	start := func() error {
		n, err := node.Open(cfg)
		if err != nil {
			return err
		}
		if err := n.Start(context.Background()); err != nil {
			_ = n.Abandon()
			return err
		}
		return n.Close()
	}
	if err := start(); err == nil {
		t.Fatal("started with the HTTP port taken")
	}
	if _, err := os.Stat(storeDir); !os.IsNotExist(err) {
		t.Fatalf("failed first start left %s behind (%v)", storeDir, err)
	}
	// A good run creates the store; a failed one later keeps it.
	cfg.HTTPAddr = ""
	if err := start(); err != nil {
		t.Fatal(err)
	}
	cfg.HTTPAddr = busy.Addr().String()
	if err := start(); err == nil {
		t.Fatal("started with the HTTP port taken")
	}
	if _, err := os.Stat(storeDir); err != nil {
		t.Fatalf("a failed later start removed the store: %v", err)
	}
}
