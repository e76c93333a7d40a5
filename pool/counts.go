package pool

import (
	"time"

	"github.com/up-pool/up/dht/keyspace"
)

// Counts reports the jobs held, and those for which this node is the
// closest in its local view (the load-balancing n_job). The closest are
// kept counted as jobs come and go (closestCount): a call looks at the
// jobs that came since the last one, and at every job only when the
// routing table or this node's position changed.
func (p *Pool) Counts() (held, closest int) {
	gen, self := p.dht.TableGen(), p.dht.Self()
	nearest := p.dht.SelfNearestFunc() // taken outside p.mu: it may list the routing table
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &p.close
	if c.gen != gen+1 || c.self != self {
		c.n, c.fresh = 0, c.fresh[:0]
		for _, e := range p.jobs {
			c.count(e, nearest)
		}
		c.gen, c.self = gen+1, self
		return len(p.jobs), c.n
	}
	for _, k := range c.fresh {
		if e, ok := p.jobs[k]; ok && !e.counted {
			c.count(e, nearest)
		}
	}
	c.fresh = c.fresh[:0]
	return len(p.jobs), c.n
}

// closestCount is the number of held jobs this node is the closest to,
// as of routing-table generation gen − 1 (0: not counted yet) and
// position self, and the jobs held since that are not counted yet.
// Guarded by Pool.mu.
type closestCount struct {
	n     int
	gen   uint64
	self  keyspace.Pos
	fresh []string
}

// count counts e with nearest.
func (c *closestCount) count(e *entry, nearest func(keyspace.Pos) bool) {
	e.counted, e.closest = true, nearest(e.pos)
	if e.closest {
		c.n++
	}
}

// add notes job key, just held, for the next count; when more jobs wait
// than are held (Counts is not being called) the next count starts over,
// so the list stays bounded by the jobs held.
func (c *closestCount) add(key string, e *entry, held int) {
	e.counted = false
	if len(c.fresh) >= held {
		c.gen, c.fresh = 0, c.fresh[:0]
		return
	}
	c.fresh = append(c.fresh, key)
}

// drop takes e, no longer held, out of the count.
func (c *closestCount) drop(e *entry) {
	if e.counted && e.closest {
		c.n--
	}
	e.counted = false
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
