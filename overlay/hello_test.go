package overlay

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/wire"
)

// msgLog sends the message of every log record to a channel.
type msgLog chan string

func (l msgLog) Enabled(context.Context, slog.Level) bool { return true }
func (l msgLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l msgLog) WithGroup(string) slog.Handler            { return l }
func (l msgLog) Handle(_ context.Context, r slog.Record) error {
	select {
	case l <- r.Message:
	default:
	}
	return nil
}

// TestHelloVerdicts: a handshake cut because the connection closed under it
// (a peer restarting, a duplicate connection dropped) is no verdict: the
// peer is not blocked and may reconnect at once. A peer that answers the
// hello with garbage is refused and blocked.
func TestHelloVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  func(s network.Stream)
		wantLog string
		blocked bool
	}{
		{"connection closed mid-hello", func(s network.Stream) {
			_ = s.Conn().Close()
		}, "hello interrupted", false},
		{"garbage answer", func(s network.Stream) {
			_, _ = s.Write([]byte{0x05, 1, 2, 3, 4, 5})
			_ = s.Close()
		}, "peer refused", true},
		{"no hello handler yet", nil, "peer serves no hello", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newRPCNet(t)
			logs := make(msgLog, 16)
			e := n.endpointWith(n.ca, certs.RoleNode, logs)
			other := n.host()
			if tc.answer != nil {
				other.SetStreamHandler(wire.ProtoHello, tc.answer)
			}
			n.link()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			connect(ctx, t, other, e.Raw())
			for got := ""; got != tc.wantLog; {
				select {
				case got = <-logs:
				case <-ctx.Done():
					t.Fatalf("no %q logged", tc.wantLog)
				}
			}
			if got := e.adm.IsBlocked(other.ID()); got != tc.blocked {
				t.Fatalf("blocked = %v, want %v", got, tc.blocked)
			}
			if !tc.blocked {
				connect(ctx, t, other, e.Raw()) // the gater lets it back in
			}
		})
	}
}
