package node

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/web"
)

// Status is the node's /status document.
type Status struct {
	Role         string   `json:"role"` // always "node": tells a node's API from a client's
	Name         string   `json:"name"`
	PeerID       string   `json:"peer_id"`
	Position     string   `json:"position"`
	PositionSeq  uint64   `json:"position_seq"`
	Addrs        []string `json:"addrs"`
	Uptime       float64  `json:"uptime_s"` // seconds since the node started
	RoutingTable int      `json:"routing_table"`
	// RoutingPeers are the peer IDs in the routing table (only nodes
	// that serve the DHT, so only publicly reachable ones).
	RoutingPeers []string        `json:"routing_peers"`
	Connections  int             `json:"connections"`
	Admitted     map[string]int  `json:"admitted"`
	CRLNumber    uint64          `json:"crl_number"`
	Lookups      dht.LookupStats `json:"lookups"`
	JobsHeld     int             `json:"jobs_held"`
	IndexEntries int             `json:"index_entries"`
	Neighbours   []Neighbour     `json:"neighbours"`
	// Reachability is whether the network can dial the node, why, and its
	// announced, confirmed, mapped and relayed addresses.
	Reachability overlay.ReachInfo `json:"reachability"`
	// DHTMode is the configured mode: server, client or auto.
	DHTMode string `json:"dht_mode"`
	// DHTServer: the node serves the DHT now, so it sits in routing tables
	// and may hold jobs and index entries; false for a client-mode node.
	DHTServer bool `json:"dht_server"`
	// Revocations are the serial numbers of the certificates revoked by
	// the revocation list the node holds (number CRLNumber).
	Revocations Revocations `json:"revocations"`
}

// Neighbour is a peer near the node's own position.
type Neighbour struct {
	PeerID       string `json:"peer_id"`
	Position     string `json:"position"`
	CommonPrefix int    `json:"common_prefix_bits"`
}

// Status reports the node's current state.
func (n *Node) Status() Status {
	in := n.cur()
	self := in.dht.Self()
	st := Status{
		Role:         "node",
		Name:         n.id.Name,
		PeerID:       n.ID().String(),
		Position:     self.String(),
		PositionSeq:  n.id.Position.Position.Seq,
		Uptime:       n.cfg.Now().Sub(n.started).Round(time.Millisecond).Seconds(),
		RoutingTable: in.dht.RoutingTableSize(),
		Connections:  len(in.host.Network().Conns()),
		Admitted:     map[string]int{},
		Lookups:      in.dht.Stats(),
		JobsHeld:     in.pool.Len(),
		IndexEntries: in.index.Len(),
		DHTMode:      in.dht.Mode().String(),
		DHTServer:    in.dht.IsServer(),
	}
	if in.reach != nil {
		st.Reachability = in.reach.Info()
	}
	for _, p := range in.dht.RoutingTablePeers() {
		st.RoutingPeers = append(st.RoutingPeers, p.String())
	}
	for _, a := range n.Addrs() {
		st.Addrs = append(st.Addrs, a.String())
	}
	for _, a := range in.ep.Admission().Peers() {
		st.Admitted[string(a.Role())]++
	}
	rl := in.ep.Admission().Verifier().RevocationList()
	if rl != nil {
		st.CRLNumber = rl.Number.Uint64()
	}
	st.Revocations = n.revocations(rl)
	for _, p := range in.dht.NearestLocal(self, 9) {
		if p == n.ID() {
			continue
		}
		pos := keyspace.PeerPos([]byte(p))
		st.Neighbours = append(st.Neighbours, Neighbour{
			PeerID: p.String(), Position: pos.String(), CommonPrefix: keyspace.CommonPrefixLen(self, pos),
		})
	}
	return st
}

// serveHTTP listens on Config.HTTPAddr and serves the API behind
// web.Guard: beyond loopback, every request must carry the token of
// DATA/http.token (made at the first such start).
func (n *Node) serveHTTP() error {
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("HTTP API on %s: %w", n.cfg.HTTPAddr, err)
	}
	token := ""
	if !web.Loopback(ln.Addr().String()) {
		path := filepath.Join(n.cfg.DataDir, web.TokenFile)
		if token, err = web.LoadToken(path); err != nil {
			_ = ln.Close()
			return fmt.Errorf("HTTP API on %s: %w", ln.Addr(), err)
		}
		n.log.Warn("HTTP API is reachable beyond this machine: requests must carry the token", "addr", ln.Addr(), "token_file", path)
	}
	n.httpLn = ln
	n.httpSrv = &http.Server{Handler: web.Guard(n.apiMux(), token), ReadHeaderTimeout: 5 * time.Second}
	n.goLoop(func() {
		if err := n.httpSrv.Serve(ln); err != nil && err != http.ErrServerClosed {
			n.log.Error("HTTP API", "err", err)
		}
	})
	n.log.Info("HTTP API listening", "addr", ln.Addr().String(), "page", "http://"+ln.Addr().String()+"/")
	return nil
}

// apiMux routes the API: the page and its assets, /status, /api/series,
// /evidence and /metrics. Each answer reads counters the node keeps; none
// looks anything up on the network.
func (n *Node) apiMux() *http.ServeMux {
	mux := http.NewServeMux()
	web.Mount(mux)
	mux.Handle("GET /{$}", n.page())
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(n.Status())
	})
	mux.HandleFunc("GET /api/series", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(n.series.AppendJSON(nil, n.cfg.Now()))
	})
	mux.HandleFunc("GET /evidence", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(n.Evidence())
	})
	build := prometheus.NewRegistry()
	build.MustRegister(overlay.BuildInfo(n.cfg.Version))
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		// The instance's registry is replaced when the node moves; the
		// build info is the process's.
		g := prometheus.Gatherers{n.cur().ep.Metrics().Registry, build}
		promhttp.HandlerFor(g, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
	return mux
}
