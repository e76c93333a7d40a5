package overlay

import (
	"context"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// gatedHost is the host handed to kad-dht: every stream handler set on it
// first waits for the remote peer's admission and resets the stream of a
// peer that has none.
type gatedHost struct {
	host.Host
	e *Endpoint
}

func (g *gatedHost) SetStreamHandler(pid protocol.ID, handler network.StreamHandler) {
	g.Host.SetStreamHandler(pid, g.e.gate(pid, handler))
}

func (g *gatedHost) SetStreamHandlerMatch(pid protocol.ID, match func(protocol.ID) bool, handler network.StreamHandler) {
	g.Host.SetStreamHandlerMatch(pid, match, g.e.gate(pid, handler))
}

// gate wraps handler so that it runs only for admitted peers.
func (e *Endpoint) gate(pid protocol.ID, handler network.StreamHandler) network.StreamHandler {
	return func(s network.Stream) {
		p := s.Conn().RemotePeer()
		if _, ok := e.adm.Get(p); !ok {
			if e.adm.IsBlocked(p) {
				e.m.Refused.WithLabelValues(string(pid)).Inc()
				_ = s.Reset()
				return
			}
			ctx, cancel := context.WithTimeout(e.ctx, e.cfg.HelloTimeout)
			_, err := e.adm.Wait(ctx, p)
			cancel()
			if err != nil {
				e.m.Refused.WithLabelValues(string(pid)).Inc()
				e.log.Debug("stream refused", "protocol", pid, "peer", p, "err", err)
				_ = s.Reset()
				return
			}
		}
		handler(s)
	}
}
