package client

import (
	"fmt"
	"testing"
	"time"
)

// TestQuantile: the nearest-rank quantile is the value at index
// ceil(q·n)−1 of the sorted window; 0 for an empty one.
func TestQuantile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	cases := []struct {
		name string
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one, median", ms(7), 0.5, 7 * time.Millisecond},
		{"one, p99", ms(7), 0.99, 7 * time.Millisecond},
		{"two, median is the lower", ms(1, 9), 0.5, time.Millisecond},
		{"two, p99 is the higher", ms(1, 9), 0.99, 9 * time.Millisecond},
		{"odd, median", ms(1, 2, 3, 4, 5), 0.5, 3 * time.Millisecond},
		{"even, median", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"hundred, median", ms(hundred...), 0.5, 50 * time.Millisecond},
		{"hundred, p99", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"hundred, max", ms(hundred...), 1, 100 * time.Millisecond},
		{"ten, p99 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{"tiny q, the min", ms(4, 5, 6), 0.001, 4 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := quantile(c.in, c.q); got != c.want {
				t.Fatalf("quantile(%v, %v) = %v, want %v", c.in, c.q, got, c.want)
			}
		})
	}
}

// TestDurationRingKeepsTheLatest: past claimWindow durations, the ring
// holds the latest claimWindow of them.
func TestDurationRingKeepsTheLatest(t *testing.T) {
	for _, n := range []int{0, 3, claimWindow, claimWindow + 1, 3*claimWindow + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var r durationRing
			for i := range n {
				r.add(time.Duration(i+1) * time.Millisecond)
			}
			s := r.sorted()
			if want := min(n, claimWindow); len(s) != want {
				t.Fatalf("%d held, want %d", len(s), want)
			}
			if n > 0 && (s[0] != time.Duration(n-len(s)+1)*time.Millisecond || s[len(s)-1] != time.Duration(n)*time.Millisecond) {
				t.Fatalf("holds %v to %v, want the latest %d of 1 ms to %d ms", s[0], s[len(s)-1], len(s), n)
			}
		})
	}
}
