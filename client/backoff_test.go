package client

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestBackoffCappedWhileListed: a project whose entries the index served
// lately backs off 30 s at most (it looks again soon enough to take work
// up when it appears); one with nothing listed for long backs off up to
// BackoffMax; a pause leaves the backoff as it was.
func TestBackoffCappedWhileListed(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name   string
		listed time.Duration // how long ago the index served entries (0: never)
		want   time.Duration
	}{
		{"never listed", 0, 5 * time.Minute},
		{"listed a minute ago", time.Minute, listedBackoff},
		{"listed an hour ago", time.Hour, 5 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := &Client{cfg: Config{BackoffMin: time.Second, BackoffMax: 5 * time.Minute, Now: func() time.Time { return now }},
				rng: rand.New(rand.NewPCG(1, 2)), backoff: map[string]backoff{}, listed: map[string]time.Time{}}
			if c.listed > 0 {
				cl.listed["lhc"] = now.Add(-c.listed)
			}
			for range 20 {
				cl.setBackoff("lhc")
			}
			if got := cl.backoff["lhc"].wait; got != c.want {
				t.Fatalf("backoff grew to %v, want %v", got, c.want)
			}
			cl.pause("lhc", time.Second)
			if got := cl.backoff["lhc"]; got.wait != c.want || time.Until(got.until) > time.Second {
				t.Fatalf("after a pause: wait %v, until in %v", got.wait, time.Until(got.until))
			}
		})
	}
}
