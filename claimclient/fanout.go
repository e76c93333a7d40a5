package claimclient

import (
	"context"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/up-pool/up/wire"
)

// shortID is the tail of a peer ID, for error messages.
func shortID(n string) string {
	s := peer.ID(n).String()
	return "…" + s[max(len(s)-6, 0):]
}

// fanOut sends req to every node in parallel, each given the ask timeout,
// and returns each one's error.
func (c *Claimer) fanOut(ctx context.Context, nodes []string, proto string, req any) map[string]error {
	return c.fanOutTo(ctx, nodes, proto, func(string) any { return req })
}

// fanOutTo is fanOut sending each node the request reqOf(node).
func (c *Claimer) fanOutTo(ctx context.Context, nodes []string, proto string, reqOf func(node string) any) map[string]error {
	return c.fanOutEach(ctx, nodes, proto, reqOf, 1024, func(string) wire.Validator { return &wire.Ping{} })
}

// fanOutResp is fanOut decoding each node's answer, of at most max bytes,
// into resp(node).
func (c *Claimer) fanOutResp(ctx context.Context, nodes []string, proto string, req any, max int, resp func(node string) wire.Validator) map[string]error {
	return c.fanOutEach(ctx, nodes, proto, func(string) any { return req }, max, resp)
}

// fanOutEach is fanOutResp sending each node the request reqOf(node).
func (c *Claimer) fanOutEach(ctx context.Context, nodes []string, proto string, reqOf func(node string) any, max int, resp func(node string) wire.Validator) map[string]error {
	return c.fanOutCall(ctx, nodes, func(ctx context.Context, n string) error {
		return c.ep.Call(ctx, peer.ID(n), protocol.ID(proto), reqOf(n), max, resp(n))
	})
}

// fanOutCall runs call for every node at once, within the ask timeout,
// and returns each one's error.
func (c *Claimer) fanOutCall(ctx context.Context, nodes []string, call func(ctx context.Context, node string) error) map[string]error {
	if c.ask > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.ask)
		defer cancel()
	}
	out := make(map[string]error, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := call(ctx, n)
			mu.Lock()
			out[n] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func ids(ps []peer.ID) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}
