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

// TestPlanRound: the closest syncs to the other r − 1, the others to the
// closest, a node out of the r hands the job on to its closest and drops
// it only past the replica expiry.
func TestPlanRound(t *testing.T) {
	const self, a, b, c = peer.ID("self"), peer.ID("a"), peer.ID("b"), peer.ID("c")
	const now, expiry = 1_000_000, 60_000
	jobs := []pool.RoundJob{
		{Holding: pool.Holding{Key: "closest", Responsible: now - 1}, View: []peer.ID{self, a, b}},
		{Holding: pool.Holding{Key: "second", Responsible: now - 1}, View: []peer.ID{a, self, b}},
		{Holding: pool.Holding{Key: "linger", Responsible: now - expiry}, View: []peer.ID{a, b, c}},
		{Holding: pool.Holding{Key: "drop", Responsible: now - expiry - 1}, View: []peer.ID{b, a, c}},
		{Holding: pool.Holding{Key: "alone-out", Responsible: now - expiry - 1}, View: nil},
	}
	pl := pool.PlanRound(self, jobs, now, expiry)
	want := map[peer.ID][]string{a: {"closest", "second", "linger"}, b: {"closest", "drop"}}
	if len(pl.Sync) != len(want) {
		t.Fatalf("sync targets %v, want %v", pl.Sync, want)
	}
	for tgt, keys := range want {
		if !slices.Equal(pl.Sync[tgt], keys) {
			t.Errorf("sync to %s: %v, want %v", tgt, pl.Sync[tgt], keys)
		}
	}
	if pl.Closest != 1 || !slices.Equal(pl.Responsible, []string{"closest", "second"}) {
		t.Errorf("closest %d, responsible %v", pl.Closest, pl.Responsible)
	}
	if !slices.Equal(pl.Replicas["closest"], []peer.ID{a, b}) || len(pl.Replicas) != 1 {
		t.Errorf("replicas %v", pl.Replicas)
	}
	if !pl.Handed["linger"] || !pl.Handed["drop"] || len(pl.Handed) != 2 {
		t.Errorf("handed %v", pl.Handed)
	}
	if !slices.Equal(pl.Drop, []string{"drop", "alone-out"}) {
		t.Errorf("drop %v", pl.Drop)
	}
}

// TestReplan: after a failed sync, a job goes to its new closest (or, when
// this node is now the closest, to the other r − 1), never back to the
// node that failed, and a job this node only hands on goes to its closest.
func TestReplan(t *testing.T) {
	const self, dead, a, b = peer.ID("self"), peer.ID("dead"), peer.ID("a"), peer.ID("b")
	for _, tt := range []struct {
		name   string
		view   []peer.ID
		handed bool
		want   []peer.ID
	}{
		{"now the closest", []peer.ID{self, a, b}, false, []peer.ID{a, b}},
		{"another closest", []peer.ID{a, self, b}, false, []peer.ID{a}},
		{"the dead still closest", []peer.ID{dead, self, a}, false, nil},
		{"out, not handed", []peer.ID{a, b}, false, nil},
		{"out, handed", []peer.ID{a, b}, true, []peer.ID{a}},
		{"out, handed, dead closest", []peer.ID{dead, b}, true, nil},
		{"out, handed, nobody", nil, true, nil},
	} {
		if got := pool.Replan(self, dead, tt.view, tt.handed); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Replan = %v, want %v", tt.name, got, tt.want)
		}
	}
}
