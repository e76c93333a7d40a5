package job

// Job lifetimes. A spec carries, under the project's signature, how long
// after its creation the job lives (Spec.Lifetime). Every node judges the
// expiry on its own clock with a margin for disagreeing clocks (thesis
// 3.2.4's T_skew): it refuses and drops an expired job, and remembers a
// collected job's deleted key until the job expires, so no replica, however
// long it was down, brings a collected job back.
const (
	// DefaultLifetimeMS is the lifetime of a spec that names none (version
	// 1 specs, or Lifetime 0): 30 days from creation.
	DefaultLifetimeMS = 30 * 24 * 3600 * 1000
	// MaxLifetimeMS bounds a spec's lifetime, and with it how long a node
	// must remember a deleted job: 366 days.
	MaxLifetimeMS = 366 * 24 * 3600 * 1000
	// SkewMS is the most one machine's clock may be off the true time
	// (the trust model's ±10 min).
	SkewMS = 10 * 60 * 1000
	// ExpiryMarginMS is how long past a job's expiry, on its own clock, a
	// node still holds the job: the project's clock (which set Created) and
	// the node's may each be SkewMS off, in opposite directions.
	ExpiryMarginMS = 2 * SkewMS
)

// lifetimeOf is a spec's lifetime in ms, the default where it names none.
func lifetimeOf(s *Spec) int64 {
	if s.Lifetime == 0 {
		return DefaultLifetimeMS
	}
	return s.Lifetime
}

// Expires is when the job expires, in Unix ms on the project's clock:
// creation + lifetime. It saturates instead of overflowing.
func (s *Spec) Expires() int64 {
	return satAdd(s.Created, lifetimeOf(s))
}

// Expired reports whether a job expiring at expires (Spec.Expires) is
// expired at now, read from the judging node's own clock: once now passes
// the expiry by ExpiryMarginMS. A node whose clock is SkewMS fast thus
// never drops a job before the project's clock reaches its expiry, and one
// whose clock is SkewMS slow drops it at most ExpiryMarginMS + 2·SkewMS
// after.
func Expired(expires, now int64) bool {
	return now >= KeepUntil(expires)
}

// KeepUntil is the time, on a node's own clock, from which the node
// refuses a job expiring at expires; until then it holds the job, or
// remembers the key of it if it deleted it collected.
func KeepUntil(expires int64) int64 { return satAdd(expires, ExpiryMarginMS) }

func satAdd(a, b int64) int64 {
	if b > 0 && a > (1<<63-1)-b {
		return 1<<63 - 1
	}
	return a + b
}
