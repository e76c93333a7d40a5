package client

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"
)

// Nodes limit each client's index queries and claim requests to 20 a
// second with bursts of 40 (indexnet.ServerConfig.QueryLimit,
// claimnet.Config.Limit). A client paces its own requests to each node
// below that, paceRate a second with bursts of as many (Config.Pace), so
// that no node refuses it: over any span of t seconds it sends at most
// paceRate·(1 + t) requests to a node, under the 40 + 20·t the node allows.
const paceRate = 15

// pacer is a token bucket per node: Wait blocks until the node may be
// asked again. Safe for concurrent use.
type pacer struct {
	rate  rate.Limit
	burst int

	mu    sync.Mutex
	nodes map[peer.ID]*rate.Limiter
}

// newPacer paces perSecond requests a second to each node, in bursts of
// burst; nil (no pacing) when perSecond is negative.
func newPacer(perSecond float64, burst int) *pacer {
	if perSecond < 0 {
		return nil
	}
	return &pacer{rate: rate.Limit(perSecond), burst: burst, nodes: map[peer.ID]*rate.Limiter{}}
}

// Wait takes a token of node n's bucket, waiting for one until ctx ends;
// a nil pacer does not wait.
func (p *pacer) Wait(ctx context.Context, n peer.ID) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	l := p.nodes[n]
	if l == nil {
		if len(p.nodes) >= pacerNodes {
			p.forgetFull(time.Now())
		}
		l = rate.NewLimiter(p.rate, p.burst)
		p.nodes[n] = l
	}
	p.mu.Unlock()
	return l.Wait(ctx)
}

// pacerNodes bounds the nodes a pacer keeps a bucket for.
const pacerNodes = 4096

// forgetFull drops the buckets that are full again (nodes not asked
// lately: a new bucket is the same); p.mu is held.
func (p *pacer) forgetFull(now time.Time) {
	for n, l := range p.nodes {
		if l.TokensAt(now) >= float64(p.burst) {
			delete(p.nodes, n)
		}
	}
}
