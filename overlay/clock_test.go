package overlay

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

const protoBig protocol.ID = "/up/test/big/1.0.0"

// TestSlowClockServes: a node whose clock is 9 min behind (within T_skew)
// admits new peers and serves calls, on the mux and on a stream of their
// own, over real TCP. Socket deadlines are durations on this machine's own
// timer, never the protocol clock: set from a slow protocol clock they lie
// in the past, and every hello read failed at once, so the node refused
// each new connection (seen in the adversarial run as confirms failing
// with "connection closed").
func TestSlowClockServes(t *testing.T) {
	ca := newCA(t, 1)
	server := tcpEndpointClock(t, ca, 1, certs.RoleNode, func() time.Time { return time.Now().Add(-9 * time.Minute) })
	client := tcpEndpointClock(t, ca, 2, certs.RoleClient, nil)
	var calls atomic.Int32
	serve(server, &calls)
	server.Handle(protoBig, 1<<20, nil, func(context.Context, *Admitted, []byte) (any, error) {
		calls.Add(1)
		return &wire.CRLResponse{Number: 7}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Join(ctx, peer.AddrInfo{ID: server.ID(), Addrs: server.Raw().Addrs()}); err != nil {
		t.Fatalf("join a node with a slow clock: %v", err)
	}
	var resp wire.NearResponse
	if err := client.Call(ctx, server.ID(), protoEcho, &wire.NearRequest{Target: bytes.Repeat([]byte{1}, 32), Count: 1}, 4096, &resp); err != nil {
		t.Fatalf("call on the mux: %v", err)
	}
	big := &wire.NearRequest{Target: bytes.Repeat([]byte{1}, wire.MaxMuxRequest+1), Count: 1}
	if err := client.Call(ctx, server.ID(), protoBig, big, 1024, &wire.CRLResponse{}); err != nil {
		t.Fatalf("call on its own stream: %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d handler runs, want 2", calls.Load())
	}
}
