package pool

import (
	"context"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/wire"
)

// resyncs remembers when each job was last resynced here (Unix ms on this
// node's clock), so a job is resynced at most once per ResyncInterval.
type resyncs struct {
	mu   sync.Mutex
	last map[string]int64 // started
	done map[string]int64 // finished
}

// finished records that key's resync ended at now.
func (r *resyncs) finished(key []byte, now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		r.done = map[string]int64{}
	}
	r.done[string(key)] = now
}

// doneSince reports whether a resync of key ended at or after t.
func (r *resyncs) doneSince(key []byte, t int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.done[string(key)]
	return ok && at >= t
}

// due reports whether key may be resynced at now, and if so marks it.
// Entries older than interval are swept when the map grows past max.
func (r *resyncs) due(key []byte, now, interval int64, max int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]int64{}
	}
	if at, ok := r.last[string(key)]; ok && now-at < interval && now >= at {
		return false
	}
	if len(r.last) >= max {
		for k, at := range r.last {
			if now-at >= interval || now < at {
				delete(r.last, k)
				delete(r.done, k)
			}
		}
		if len(r.last) >= max {
			return false
		}
	}
	r.last[string(key)] = now
	return true
}

// maxResyncs bounds the jobs whose last resync a node remembers.
const maxResyncs = 1 << 16

// Resync syncs job key, in the background, with every live node among its
// r closest in this node's view: each answers with its own state when that
// is newer (job/sync is push-pull), merged here with its proof. A node
// calls it when its state of a job may be stale — it denied a claim
// because of a claim it holds, which its fellow replicas may have seen
// released — instead of waiting for the next republish round (25 min).
// At most once per job per ResyncInterval; r − 1 sync RPCs each.
func (p *Pool) Resync(key []byte) {
	if !p.resynced.due(key, p.nowMS(), p.cfg.ResyncInterval.Milliseconds(), maxResyncs) {
		return
	}
	key = append([]byte(nil), key...)
	p.inflight.Go(func() {
		p.resync(p.ctx, key)
		p.resynced.finished(key, p.nowMS())
	})
}

// ResyncedSince reports whether a Resync of job key ended at or after t
// (Unix ms on this node's clock).
func (p *Pool) ResyncedSince(key []byte, t int64) bool { return p.resynced.doneSince(key, t) }

// resync is Resync's round: one sync of the job's state with each live
// node of its r closest but this one.
func (p *Pool) resync(ctx context.Context, key []byte) {
	item, ok := p.storedItem(key) // state and proof read together
	if !ok {
		return
	}
	pos := p.posOf(key)
	for _, t := range p.dht.NearestLive(ctx, pos, p.r) {
		if t == p.self() {
			continue
		}
		var rs RoundStats
		if err := p.syncWith(ctx, peer.ID(t), []wire.SyncItem{item}, &rs); err != nil {
			p.log.Debug("resync failed", "job", pos.String(), "peer", t, "err", err)
		}
		p.mResynced.Inc()
	}
}

// Stored returns a held job's state as stored (unexpired: a released or
// lapsed claim is still a claim here) and its proof, for diagnostics.
func (p *Pool) Stored(key []byte) (job.State, []byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.jobs[string(key)]
	if !ok {
		return job.State{}, nil, false
	}
	return e.state, e.proof, true
}
