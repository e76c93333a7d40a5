package overlay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/testnet/testkit"
	"github.com/up-pool/up/wire"
)

const (
	protoEcho     protocol.ID = "/up/test/echo/1.0.0"
	protoNotFound protocol.ID = "/up/test/notfound/1.0.0"
	protoInternal protocol.ID = "/up/test/internal/1.0.0"
	protoSmall    protocol.ID = "/up/test/small/1.0.0"
	protoNodeOnly protocol.ID = "/up/test/nodeonly/1.0.0"
)

// rpcNet is a mocknet with one test CA.
type rpcNet struct {
	t    *testing.T
	mn   mocknet.Mocknet
	ca   *certs.Authority
	next uint64
}

func newRPCNet(t *testing.T) *rpcNet {
	mn := mocknet.New()
	t.Cleanup(func() { _ = mn.Close() }) // registered first: runs after the endpoints close
	return &rpcNet{t: t, mn: mn, ca: newCA(t, 1), next: 1}
}

// host adds a mocknet host with a fresh identity.
func (n *rpcNet) host() host.Host {
	n.t.Helper()
	seed := n.next
	n.next++
	key, _, err := crypto.GenerateEd25519Key(detRand(seed + 9000))
	if err != nil {
		n.t.Fatal(err)
	}
	h, err := n.mn.AddPeer(key, multiaddr.StringCast(fmt.Sprintf("/ip4/10.0.0.%d/tcp/4001", seed)))
	if err != nil {
		n.t.Fatal(err)
	}
	return h
}

// endpoint adds a host and an Endpoint certified by n's CA with the given
// role.
func (n *rpcNet) endpoint(role certs.Role) *Endpoint {
	return n.endpointWith(n.ca, role, slog.DiscardHandler)
}

// endpointWith adds an Endpoint that trusts n's CA, holds a certificate
// from issuer and logs to logs.
func (n *rpcNet) endpointWith(issuer *certs.Authority, role certs.Role, logs slog.Handler) *Endpoint {
	n.t.Helper()
	h := n.host()
	now := time.Now()
	acc := newAccount(n.t, issuer, role, n.next+100, now.Add(-time.Hour), now.Add(24*time.Hour))
	pos := certs.SignPosition(acc.key, certs.Position{PeerID: []byte(h.ID()), Seq: 1, IssuedAt: now})
	e, err := New(h, Config{
		Verifier:     certs.NewVerifier(n.ca.Cert),
		Cert:         acc.cert.Raw,
		Position:     pos.Marshal(),
		HelloTimeout: 10 * time.Second,
		Logger:       slog.New(logs),
	})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { _ = e.Close() })
	return e
}

func (n *rpcNet) link() {
	n.t.Helper()
	if err := n.mn.LinkAll(); err != nil {
		n.t.Fatal(err)
	}
}

func connect(ctx context.Context, t *testing.T, a, b host.Host) {
	t.Helper()
	if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatalf("connect: %v", err)
	}
}

// admitBoth connects a to b and waits until each has admitted the other.
func admitBoth(ctx context.Context, t *testing.T, a, b *Endpoint) {
	t.Helper()
	connect(ctx, t, a.Raw(), b.Raw())
	if _, err := a.WaitAdmitted(ctx, b.ID()); err != nil {
		t.Fatalf("a admits b: %v", err)
	}
	if _, err := b.WaitAdmitted(ctx, a.ID()); err != nil {
		t.Fatalf("b admits a: %v", err)
	}
}

// serve registers the test handlers on e; calls counts handler runs.
func serve(e *Endpoint, calls *atomic.Int32) {
	e.Handle(protoEcho, 1024, nil, func(_ context.Context, from *Admitted, body []byte) (any, error) {
		calls.Add(1)
		var req wire.NearRequest
		if err := wire.Decode(body, &req); err != nil {
			return nil, StatusErr(wire.StatusBadRequest, err)
		}
		// Answer with the caller's own identity and the request echoed.
		return &wire.NearResponse{Peers: []wire.PeerRecord{
			{ID: []byte(from.Peer), Addrs: [][]byte{req.Target, []byte(from.Role())}},
		}}, nil
	})
	e.Handle(protoNotFound, 1024, nil, func(context.Context, *Admitted, []byte) (any, error) {
		calls.Add(1)
		return nil, StatusErr(wire.StatusNotFound, errors.New("no such job"))
	})
	e.Handle(protoInternal, 1024, nil, func(context.Context, *Admitted, []byte) (any, error) {
		calls.Add(1)
		return nil, errors.New("disk on fire")
	})
	e.Handle(protoSmall, 16, nil, func(context.Context, *Admitted, []byte) (any, error) {
		calls.Add(1)
		return &wire.CRLRequest{}, nil
	})
	e.Handle(protoNodeOnly, 1024, []certs.Role{certs.RoleNode}, func(context.Context, *Admitted, []byte) (any, error) {
		calls.Add(1)
		return &wire.CRLResponse{Number: 7}, nil
	})
}

func wantStatus(t *testing.T, err error, status wire.Status, msg string) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v is not a *wire.Error", err)
	}
	if we.Status != status || !bytes.Contains([]byte(we.Msg), []byte(msg)) {
		t.Fatalf("reply %q (%s), want status %s with %q", we.Msg, we.Status, status, msg)
	}
}

func TestCall(t *testing.T) {
	n := newRPCNet(t)
	server := n.endpoint(certs.RoleNode)
	node := n.endpoint(certs.RoleNode)
	client := n.endpoint(certs.RoleClient)
	n.link()
	var calls atomic.Int32
	serve(server, &calls)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admitBoth(ctx, t, node, server)
	admitBoth(ctx, t, client, server)

	target := bytes.Repeat([]byte{0x5a}, 32)
	t.Run("value", func(t *testing.T) {
		var resp wire.NearResponse
		if err := client.Call(ctx, server.ID(), protoEcho, &wire.NearRequest{Target: target, Count: 1}, 4096, &resp); err != nil {
			t.Fatal(err)
		}
		want := wire.NearResponse{Peers: []wire.PeerRecord{{ID: []byte(client.ID()), Addrs: [][]byte{target, []byte("client")}}}}
		enc1, _ := wire.Marshal(&resp)
		enc2, _ := wire.Marshal(&want)
		if !bytes.Equal(enc1, enc2) {
			t.Fatalf("response %+v, want %+v", resp, want)
		}
		if got := CounterValue(server.Metrics().RPCReceived, string(protoEcho), "client"); got != 1 {
			t.Fatalf("rpc received counter %v, want 1", got)
		}
	})
	t.Run("nil response", func(t *testing.T) {
		if err := node.Call(ctx, server.ID(), protoEcho, &wire.NearRequest{Target: target, Count: 1}, 4096, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("bad request from handler", func(t *testing.T) {
		err := client.Call(ctx, server.ID(), protoEcho, &wire.NearRequest{Target: target[:5], Count: 1}, 4096, nil)
		wantStatus(t, err, wire.StatusBadRequest, "near target of 5 bytes")
	})
	t.Run("not found", func(t *testing.T) {
		err := client.Call(ctx, server.ID(), protoNotFound, &wire.CRLRequest{}, 4096, nil)
		wantStatus(t, err, wire.StatusNotFound, "no such job")
		if CounterValue(client.Metrics().RPCFailed, string(protoNotFound), "out") != 1 {
			t.Fatal("failed call not counted")
		}
	})
	t.Run("internal", func(t *testing.T) {
		err := client.Call(ctx, server.ID(), protoInternal, &wire.CRLRequest{}, 4096, nil)
		wantStatus(t, err, wire.StatusInternal, "disk on fire")
	})
	t.Run("request too large", func(t *testing.T) {
		before := calls.Load()
		err := client.Call(ctx, server.ID(), protoSmall, &wire.NearRequest{Target: target, Count: 1}, 4096, nil)
		wantStatus(t, err, wire.StatusBadRequest, "frame too large")
		if calls.Load() != before {
			t.Fatal("handler ran for an oversized request")
		}
		// Just inside the limit is served.
		if err := client.Call(ctx, server.ID(), protoSmall, &wire.NearRequest{Target: target[:10], Count: 1}, 4096, nil); err != nil {
			t.Fatalf("request within the limit: %v", err)
		}
	})
	t.Run("response too large", func(t *testing.T) {
		err := client.Call(ctx, server.ID(), protoEcho, &wire.NearRequest{Target: target, Count: 1}, 16, &wire.NearResponse{})
		if !errors.Is(err, wire.ErrFrameTooLarge) {
			t.Fatalf("oversized response = %v, want ErrFrameTooLarge", err)
		}
	})
	t.Run("role restricted", func(t *testing.T) {
		before := calls.Load()
		err := client.Call(ctx, server.ID(), protoNodeOnly, &wire.CRLRequest{}, 4096, nil)
		wantStatus(t, err, wire.StatusUnauthorized, "role client")
		if calls.Load() != before {
			t.Fatal("handler ran for a refused role")
		}
		if CounterValue(server.Metrics().Refused, string(protoNodeOnly)) != 1 {
			t.Fatal("refusal not counted")
		}
		var resp wire.CRLResponse
		if err := node.Call(ctx, server.ID(), protoNodeOnly, &wire.CRLRequest{}, 4096, &resp); err != nil || resp.Number != 7 {
			t.Fatalf("node call = %+v, %v", resp, err)
		}
	})
	t.Run("self", func(t *testing.T) {
		if err := server.Call(ctx, server.ID(), protoEcho, &wire.CRLRequest{}, 4096, nil); err == nil {
			t.Fatal("call to self succeeded")
		}
	})
	t.Run("crl protocol", func(t *testing.T) {
		var resp wire.CRLResponse
		if err := client.Call(ctx, server.ID(), wire.ProtoCRL, &wire.CRLRequest{}, wire.MaxCRLFrame, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Number != 0 || len(resp.DER) != 0 {
			t.Fatalf("CRL without a list: %+v", resp)
		}
	})
}

// errorLog records the "err" attribute of every log record.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *errorLog) WithGroup(string) slog.Handler            { return l }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *errorLog) has(target error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.errs, func(err error) bool { return errors.Is(err, target) })
}

// TestCallForeignPeer: a party whose certificate comes from another CA is
// refused (ErrUnknownIssuer) and blocked; calls either way fail and no
// handler runs.
func TestCallForeignPeer(t *testing.T) {
	n := newRPCNet(t)
	logs := &errorLog{}
	server := n.endpointWith(n.ca, certs.RoleNode, logs)
	// The foreign party trusts our CA, so it admits the server; its own
	// certificate is from another CA.
	foreign := n.endpointWith(newCA(t, 99), certs.RoleNode, slog.DiscardHandler)
	n.link()
	var calls, foreignCalls atomic.Int32
	serve(server, &calls)
	serve(foreign, &foreignCalls)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect(ctx, t, foreign.Raw(), server.Raw())

	testkit.WaitFor(t, 10*time.Second, "the server to refuse the foreign peer", func() bool {
		return server.Admission().IsBlocked(foreign.ID())
	})
	if !logs.has(certs.ErrUnknownIssuer) {
		t.Fatal("no refusal logged with ErrUnknownIssuer")
	}
	if CounterValue(server.Metrics().Admissions, "refused") == 0 {
		t.Fatal("refusal not counted")
	}
	// The server does not consult its blocklist before calling, so a call
	// to the refused peer waits for a hello that never comes: keep the
	// context short.
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	req := &wire.NearRequest{Target: make([]byte, 32), Count: 1}
	if err := foreign.Call(short, server.ID(), protoEcho, req, 4096, nil); err == nil {
		t.Fatal("foreign peer's call succeeded")
	}
	if err := server.Call(short, foreign.ID(), protoEcho, req, 4096, nil); !errors.Is(err, ErrNotAdmitted) {
		// The server may also fail to reach the peer it blocked; it must
		// never get an answer.
		var we *wire.Error
		if err == nil || errors.As(err, &we) {
			t.Fatalf("call to the foreign peer = %v", err)
		}
	}
	if calls.Load() != 0 || foreignCalls.Load() != 0 {
		t.Fatalf("handlers ran: %d on the server, %d on the foreign peer", calls.Load(), foreignCalls.Load())
	}
	if _, ok := server.Admission().Get(foreign.ID()); ok {
		t.Fatal("foreign peer admitted")
	}
}

// TestCallSilentPeer: a connected peer that never completes its hello is
// not called: Call waits for its admission, fails with ErrNotAdmitted and
// sends no request.
func TestCallSilentPeer(t *testing.T) {
	n := newRPCNet(t)
	server := n.endpoint(certs.RoleNode)
	silent := n.host()
	n.link()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before the endpoint closes
	silent.SetStreamHandler(wire.ProtoHello, func(s network.Stream) {
		_, _ = io.Copy(io.Discard, s) // take the hello, never answer
		<-release
		_ = s.Reset()
	})
	var got atomic.Int64
	silent.SetStreamHandler(protoEcho, func(s network.Stream) {
		k, _ := io.Copy(io.Discard, s)
		got.Add(k)
		_ = s.Reset()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect(ctx, t, silent, server.Raw())

	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	err := server.Call(short, silent.ID(), protoEcho, &wire.NearRequest{Target: make([]byte, 32), Count: 1}, 4096, nil)
	if !errors.Is(err, ErrNotAdmitted) {
		t.Fatalf("call to a silent peer = %v, want ErrNotAdmitted", err)
	}
	if got.Load() != 0 {
		t.Fatalf("silent peer received %d request bytes", got.Load())
	}

}
