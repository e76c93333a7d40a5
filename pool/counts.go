package pool

import (
	"time"

	"github.com/up-pool/up/dht/keyspace"
)

// Counts reports the jobs held, and those for which this node is the
// closest in its local view (the load-balancing n_job).
func (p *Pool) Counts() (held, closest int) {
	p.mu.Lock()
	items := make([]keyspace.Pos, 0, len(p.jobs))
	for _, e := range p.jobs {
		items = append(items, e.pos)
	}
	p.mu.Unlock()
	nearest := p.dht.SelfNearestFunc()
	for _, pos := range items {
		if nearest(pos) {
			closest++
		}
	}
	return len(items), closest
}

// jitter returns the next round's wait: Interval ± Jitter, uniformly.
func (p *Pool) jitter() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	j := p.cfg.RepublishJitter
	return p.cfg.RepublishInterval - j + time.Duration(p.rng.Int64N(int64(2*j)+1))
}

// Len is the number of jobs held.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.jobs)
}

// Keys lists the keys of the jobs held.
func (p *Pool) Keys() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([][]byte, 0, len(p.jobs))
	for k := range p.jobs {
		out = append(out, []byte(k))
	}
	return out
}
