package node_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
	"github.com/up-pool/up/testnet"
)

// logLines records the messages logged, and signals each one containing
// a watched text.
type logLines struct {
	mu    sync.Mutex
	msgs  []string
	watch string
	hit   chan struct{}
}

func newLogLines(watch string) *logLines {
	return &logLines{watch: watch, hit: make(chan struct{}, 1024)}
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	if l.watch != "" && strings.Contains(r.Message, l.watch) {
		select {
		case l.hit <- struct{}{}:
		default:
		}
	}
	return nil
}

func (l *logLines) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.msgs, "\n")
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestStartRetriesJoinUntilStopped: a node whose bootstrap peer is down
// keeps trying to join, saying so in its log, well past the bounded
// retries (JoinRetries), and joins once the peer comes up.
func TestStartRetriesJoinUntilStopped(t *testing.T) {
	tn, err := testnet.Start(context.Background(), testnet.Options{Nodes: 2, Dir: t.TempDir(), Seed: 23, Transport: testnet.TCP})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	boot, err := tn.NewParty(certs.RoleNode, "boot")
	if err != nil {
		t.Fatal(err)
	}
	late, err := tn.NewParty(certs.RoleNode, "late")
	if err != nil {
		t.Fatal(err)
	}
	bootAddr := multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t)))
	logs := newLogLines("retrying until stopped")
	cfg := node.Config{
		DataDir: late.Dir, Listen: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/0")},
		Bootstrap:   []peer.AddrInfo{{ID: boot.PeerID, Addrs: []multiaddr.Multiaddr{bootAddr}}},
		JoinRetries: 2, JoinUntilStopped: true, JoinBackoffMax: 20 * time.Millisecond,
		Logger: slog.New(logs),
	}
	n, err := node.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- n.Start(ctx) }()
	for i := 0; i < 2*cfg.JoinRetries+2; i++ {
		select {
		case <-logs.hit:
		case err := <-started:
			t.Fatalf("Start returned after %d retries with its bootstrap peer down: %v\nlog:\n%s", i, err, logs.all())
		case <-ctx.Done():
			t.Fatalf("no retry logged:\n%s", logs.all())
		}
	}
	// The bootstrap node comes up, joined to the network.
	b, err := node.Open(node.Config{DataDir: boot.Dir, Listen: []multiaddr.Multiaddr{bootAddr},
		Bootstrap: []peer.AddrInfo{tn.Node(0).AddrInfo()}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatalf("Start after the bootstrap peer came up: %v", err)
	}
	if n.DHT().RoutingTableSize() == 0 {
		t.Fatal("joined with an empty routing table")
	}
}

// TestStartAloneSaysSo: a node with no bootstrap and no remembered peers
// starts and says plainly that it is alone.
func TestStartAloneSaysSo(t *testing.T) {
	tn, err := testnet.Start(context.Background(), testnet.Options{Nodes: 2, Dir: t.TempDir(), Seed: 24, Transport: testnet.TCP})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	id, err := tn.NewParty(certs.RoleNode, "solo")
	if err != nil {
		t.Fatal(err)
	}
	logs := newLogLines("")
	n, err := node.Open(node.Config{DataDir: id.Dir, Listen: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/0")}, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.all(), "this node is alone") {
		t.Fatalf("log of a node with nobody to join:\n%s", logs.all())
	}
}

// TestStartRefusedStops: a node every bootstrap peer refuses for its own
// certificate (revoked here) stops retrying and fails with the reason,
// even when told to retry until stopped.
func TestStartRefusedStops(t *testing.T) {
	tn, err := testnet.Start(context.Background(), testnet.Options{Nodes: 2, Dir: t.TempDir(), Seed: 25, Transport: testnet.TCP})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	id, err := tn.NewParty(certs.RoleNode, "banned")
	if err != nil {
		t.Fatal(err)
	}
	rl, err := tn.CA.Revoke(nil, []*big.Int{id.Cert.SerialNumber}, time.Now().Add(-time.Minute), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range tn.Live() {
		nd.Endpoint().AdoptCRL(rl)
	}
	n, err := node.Open(node.Config{DataDir: id.Dir, Listen: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/0")},
		Bootstrap: []peer.AddrInfo{tn.Node(0).AddrInfo(), tn.Node(1).AddrInfo()}, JoinUntilStopped: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = n.Start(ctx)
	var r *overlay.RefusedError
	if !errors.Is(err, overlay.ErrRefusedUs) || !errors.As(err, &r) || r.Code.String() != "certificate revoked" || ctx.Err() != nil {
		t.Fatalf("Start of a revoked node: %v, want it refused as revoked", err)
	}
}
