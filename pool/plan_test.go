package pool_test

import (
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/pool"
)

// TestHandOnTo: a job moves to a newcomer only from the closest of the
// others, and only when the newcomer entered the job's r closest.
func TestHandOnTo(t *testing.T) {
	const r = 3
	a, b, c, d, n, m := peer.ID("a"), peer.ID("b"), peer.ID("c"), peer.ID("d"), peer.ID("new"), peer.ID("new2")
	one, two := []peer.ID{n}, []peer.ID{n, m}
	for _, tc := range []struct {
		name      string
		self      peer.ID
		newcomers []peer.ID
		view      []peer.ID
		want      []peer.ID
	}{
		{"newcomer now closest, self was closest", a, one, []peer.ID{n, a, b, c}, one},
		{"newcomer second, self closest", a, one, []peer.ID{a, n, b, c}, one},
		{"newcomer r-th, self closest", a, one, []peer.ID{a, b, n, c}, one},
		{"newcomer outside the r closest", a, one, []peer.ID{a, b, c, n}, nil},
		{"newcomer not in view", a, one, []peer.ID{a, b, c, d}, nil},
		{"self second of the others: the closest hands on", b, one, []peer.ID{n, a, b, c}, nil},
		{"self last of the others", c, one, []peer.ID{a, n, b, c}, nil},
		{"self is the newcomer", n, one, []peer.ID{n, a, b}, nil},
		{"self not in view", d, one, []peer.ID{n, a, b}, nil},
		{"empty view", a, one, nil, nil},
		{"fewer nodes than r", a, one, []peer.ID{a, n}, one},
		{"two newcomers ahead of self", a, two, []peer.ID{m, n, a, b}, []peer.ID{m, n}},
		{"two newcomers, one beyond the r closest", a, two, []peer.ID{n, a, b, m}, one},
		{"two newcomers ahead of another holder", b, two, []peer.ID{m, n, a, b}, nil},
		{"no newcomers", a, nil, []peer.ID{a, b, c}, nil},
	} {
		if got := pool.HandOnTo(tc.self, tc.newcomers, tc.view, 10, r); !slices.Equal(got, tc.want) {
			t.Errorf("%s: HandOnTo(%s, %v) = %v, want %v", tc.name, tc.self, tc.view, got, tc.want)
		}
	}
	// A node whose own view is filling (it knew fewer than r others) is
	// joining itself: it hands nothing on.
	for known, want := range [][]peer.ID{nil, nil, nil, one, one} {
		if got := pool.HandOnTo(a, one, []peer.ID{n, a, b, c}, known, r); !slices.Equal(got, want) {
			t.Errorf("knowing %d others: HandOnTo = %v, want %v", known, got, want)
		}
	}
}
