package index

import (
	"slices"
	"testing"
)

// TestSelectSkipping: the jobs an asker skips are passed over as if they
// did not match (not served, not quarantined, not counted among the l
// oldest), so it is served the oldest it may take; Select serves them.
func TestSelectSkipping(t *testing.T) {
	cases := []struct {
		name    string
		skipped []int // of jobs 0..9, created in that order
		n       int
		want    []int
	}{
		{name: "none skipped", n: 2, want: []int{0, 1}},
		{name: "the oldest skipped", skipped: []int{0, 1, 2}, n: 2, want: []int{3, 4}},
		{name: "every other skipped", skipped: []int{0, 2, 4, 6, 8}, n: 3, want: []int{1, 3, 5}},
		{name: "all but one skipped", skipped: []int{0, 1, 2, 3, 4, 5, 6, 8, 9}, n: 2, want: []int{7}},
		{name: "all skipped", skipped: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, n: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := NewTable(Config{LMin: 1, LFactor: 1e-12}) // strict oldest first
			for i := range 10 {
				tb.Put(entry("k", i, int64(i)), t0)
			}
			skip := map[string]bool{}
			for _, i := range c.skipped {
				skip[string(jobKey(i))] = true
			}
			got := tb.SelectSkipping(MustParse("k"), "k", c.n, t0, newRNG(1), func(j []byte) bool { return skip[string(j)] })
			var want []string
			for _, i := range c.want {
				want = append(want, string(jobKey(i)))
			}
			if !slices.Equal(jobs(got), want) {
				t.Fatalf("served %v, want %v", jobs(got), want)
			}
			// The skipped were not quarantined: an asker skipping nothing
			// gets the oldest of them.
			if len(c.skipped) > 0 {
				if s := tb.Select(MustParse("k"), "k", 1, t0+1, newRNG(1)); len(s) != 1 || string(s[0].Job) != string(jobKey(c.skipped[0])) {
					t.Fatalf("then Select = %v, want the oldest skipped %s", jobs(s), jobKey(c.skipped[0]))
				}
			}
		})
	}
}
