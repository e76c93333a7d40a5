package overlay

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimiter is a token bucket per key (a client's identity): rate per
// second sustained, burst at once. It holds at most maxKeys buckets,
// forgetting idle ones first. Safe for concurrent use.
type RateLimiter struct {
	rate  rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	used time.Time
}

const maxKeys = 100000

// NewRateLimiter returns a limiter of perSecond sustained and burst
// requests per key; now reads the clock (time.Now when nil).
func NewRateLimiter(perSecond float64, burst int, now func() time.Time) *RateLimiter {
	if now == nil {
		now = time.Now
	}
	return &RateLimiter{rate: rate.Limit(perSecond), burst: burst, now: now, buckets: map[string]*bucket{}}
}

// Allow takes one token from key's bucket, reporting whether one was left.
func (l *RateLimiter) Allow(key string) bool { return l.AllowN(key, 1) }

// AllowN takes n tokens from key's bucket, reporting whether n were left
// (none are taken when not: a request for more than the burst never
// passes).
func (l *RateLimiter) AllowN(key string, n int) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxKeys {
			l.evict(now)
		}
		b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[key] = b
	}
	b.used = now
	return b.lim.AllowN(now, n)
}

// evict forgets buckets idle for long enough to be full again, or, if
// none is, an arbitrary eighth.
func (l *RateLimiter) evict(now time.Time) {
	full := time.Duration(float64(l.burst)/float64(l.rate)*float64(time.Second)) + time.Second
	for k, b := range l.buckets {
		if now.Sub(b.used) > full {
			delete(l.buckets, k)
		}
	}
	for k := range l.buckets {
		if len(l.buckets) < maxKeys*7/8 {
			break
		}
		delete(l.buckets, k)
	}
}
