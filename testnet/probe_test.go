package testnet_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	pb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/proto"

	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

// upProtocols lists every /up/ protocol the node's host serves, the
// handshake aside (every party may speak it).
func upProtocols(nd *node.Node) []protocol.ID {
	var out []protocol.ID
	for _, pid := range nd.Endpoint().Raw().Mux().Protocols() {
		if strings.HasPrefix(string(pid), "/up/") && pid != wire.ProtoHello {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// probeResult is what one protocol answered a probe.
type probeResult struct {
	served  bool   // the request got past the admission gate
	replied bool   // a reply came back (served or not)
	how     string // what came back
}

// probe opens a stream on pid and reports whether the node served it: a
// kad-dht answer to FIND_NODE, or a framed reply with any status but
// StatusUnauthorized (a bad-request reply still means the gate let the
// request through). A reset or closed stream, or an Unauthorized reply, is
// a refusal.
func probe(ctx context.Context, h host.Host, p peer.ID, pid protocol.ID) probeResult {
	s, err := h.NewStream(ctx, p, pid)
	if err != nil {
		return probeResult{how: "stream refused: " + err.Error()}
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(s)
	if pid == wire.DHTProtocol {
		msg, _ := proto.Marshal(&pb.Message{Type: pb.Message_FIND_NODE, Key: []byte("some key")})
		if _, err := s.Write(append(binary.AppendUvarint(nil, uint64(len(msg))), msg...)); err != nil {
			return probeResult{how: "write: " + err.Error()}
		}
		n, err := binary.ReadUvarint(r)
		if err != nil || n == 0 {
			return probeResult{how: fmt.Sprintf("no answer: %v", err)}
		}
		if _, err := io.ReadFull(r, make([]byte, n)); err != nil {
			return probeResult{how: "short answer: " + err.Error()}
		}
		return probeResult{served: true, replied: true, how: "FIND_NODE answered"}
	}
	if pid == wire.ProtoMux {
		// A ping, multiplexed.
		ping, _ := wire.Marshal(&wire.Ping{})
		if err := wire.WriteFrame(s, &wire.MuxRequest{ID: 1, Proto: wire.ProtoPing, Body: ping}); err != nil {
			return probeResult{how: "write: " + err.Error()}
		}
		var rep wire.MuxReply
		if err := wire.ReadFrame(r, 1<<20, &rep); err != nil {
			return probeResult{how: "no reply: " + err.Error()}
		}
		if rep.Reply.Status == wire.StatusUnauthorized {
			return probeResult{replied: true, how: "unauthorized: " + rep.Reply.Msg}
		}
		return probeResult{served: true, replied: true, how: fmt.Sprintf("muxed ping: status %d %s", rep.Reply.Status, rep.Reply.Msg)}
	}
	// A well-formed request where the test knows one; an empty request
	// elsewhere, which an admitted peer gets a bad-request reply to.
	var req any
	switch pid {
	case wire.ProtoNear:
		req = &wire.NearRequest{Target: make([]byte, 32), Count: 4}
	case wire.ProtoCRL:
		req = &wire.CRLRequest{}
	}
	if req != nil {
		if err := wire.WriteFrame(s, req); err != nil {
			return probeResult{how: "write: " + err.Error()}
		}
	}
	_ = s.CloseWrite()
	var rep wire.Reply
	if err := wire.ReadFrame(r, 1<<20, &rep); err != nil {
		return probeResult{how: "no reply: " + err.Error()}
	}
	if rep.Status == wire.StatusUnauthorized {
		return probeResult{replied: true, how: "unauthorized: " + rep.Msg}
	}
	return probeResult{served: true, replied: true, how: fmt.Sprintf("status %d %s", rep.Status, rep.Msg)}
}

// probeAll probes every /up/ protocol of nd at once.
func probeAll(ctx context.Context, h host.Host, nd *node.Node) map[protocol.ID]probeResult {
	pids := upProtocols(nd)
	out := make(map[protocol.ID]probeResult, len(pids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, pid := range pids {
		wg.Go(func() {
			res := probe(ctx, h, nd.ID(), pid)
			mu.Lock()
			out[pid] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// checkAllRefused probes every /up/ protocol nd serves as h and fails the
// test for each one that was served. A refusal may come at any layer: the
// connection is cut, the stream reset, or the reply is Unauthorized.
func checkAllRefused(t *testing.T, ctx context.Context, h host.Host, nd *node.Node, who string) {
	t.Helper()
	res := probeAll(ctx, h, nd)
	if len(res) < 15 {
		t.Fatalf("only %d /up/ protocols registered: %v", len(res), upProtocols(nd))
	}
	for pid, r := range res {
		if r.served {
			t.Errorf("%s served on %s: %s", who, pid, r.how)
		}
	}
}

// startKad runs a real kad-dht server speaking the overlay's protocol on
// h, as an impostor that wants into routing tables would.
func startKad(t *testing.T, h host.Host) *kaddht.IpfsDHT {
	t.Helper()
	kad, err := kaddht.New(h, kaddht.Mode(kaddht.ModeServer), kaddht.ProtocolPrefix(wire.DHTPrefix), kaddht.DisableAutoRefresh())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kad.Close() })
	return kad
}

// pushIntoRoutingTables has an outsider running kad-dht try every way in:
// it connects to the nodes (identify then tells each that it serves the
// overlay's kad protocol), refreshes its routing table and looks up its
// own and every node's key through them. It returns once every node has
// seen the outsider's protocols, so their kad-dht had its chance to add it.
func pushIntoRoutingTables(t *testing.T, ctx context.Context, net *testnet.Network, h host.Host, kad *kaddht.IpfsDHT) {
	t.Helper()
	nodes := net.Live()
	for _, nd := range nodes {
		// Best effort: a node may cut an impostor off at once.
		_ = h.Connect(ctx, nd.AddrInfo())
		_, _ = kad.RoutingTable().TryAddPeer(nd.ID(), true, false)
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	select {
	case <-kad.RefreshRoutingTable():
	case <-lctx.Done():
	}
	for _, key := range append([]peer.ID{h.ID()}, nodes[0].ID(), nodes[len(nodes)-1].ID()) {
		// It fails once the nodes have cut the outsider off: the attempt
		// is what counts.
		_, _ = kad.GetClosestPeers(lctx, string(key))
	}
	// A node that already cut the outsider off gives its kad-dht no
	// chance; every other one must have identified it.
	testkit.WaitFor(t, 10*time.Second, "every connected node to identify the outsider's kad-dht", func() bool {
		for _, nd := range nodes {
			raw := nd.Endpoint().Raw()
			ps, err := raw.Peerstore().SupportsProtocols(h.ID(), wire.DHTProtocol)
			identified := err == nil && len(ps) > 0
			if !identified && raw.Network().Connectedness(h.ID()) == network.Connected {
				return false
			}
		}
		return true
	})
}

// neverInRoutingTable fails the test if p shows up in any node's routing
// table within d (kad-dht adds peers asynchronously, after a check).
func neverInRoutingTable(t *testing.T, net *testnet.Network, p peer.ID, d time.Duration, who string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if name := inAnyRoutingTable(net, p); name != "" {
			t.Fatalf("%s in routing table of %s", who, name)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
