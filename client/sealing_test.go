package client

import (
	"testing"
	"time"

	"github.com/up-pool/up/result"
)

// TestSessionSpent: a result session is renewed an hour after it was
// made on the client's clock, when that clock jumped back past its
// making, and after its most results; not before.
func TestSessionSpent(t *testing.T) {
	made := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		now    time.Time
		sealed int
		want   bool
	}{
		{"just made", made, 0, false},
		{"59 min on", made.Add(59 * time.Minute), 1000, false},
		{"an hour on", made.Add(SessionLifetime), 1000, true},
		{"clock jumped back", made.Add(-time.Second), 0, true},
		{"clock jumped forward a day", made.Add(24 * time.Hour), 0, true},
		{"one short of the most results", made.Add(time.Minute), result.SessionMaxResults - 1, false},
		{"the most results", made.Add(time.Minute), result.SessionMaxResults, true},
	} {
		m := &sessionMade{made: made, sealed: c.sealed}
		if got := m.spent(c.now); got != c.want {
			t.Errorf("%s: spent = %v, want %v", c.name, got, c.want)
		}
	}
}
