package replica_test

import (
	"slices"
	"testing"

	"github.com/up-pool/up/replica"
)

// nodeID stands for a node ID: the rules take any comparable type.
type nodeID string

// TestHandOnTo: a job moves to a newcomer only from the closest of the
// others, and only when the newcomer entered the job's r closest.
func TestHandOnTo(t *testing.T) {
	const r = 3
	a, b, c, d, n, m := nodeID("a"), nodeID("b"), nodeID("c"), nodeID("d"), nodeID("new"), nodeID("new2")
	one, two := []nodeID{n}, []nodeID{n, m}
	for _, tc := range []struct {
		name      string
		self      nodeID
		newcomers []nodeID
		view      []nodeID
		want      []nodeID
	}{
		{"newcomer now closest, self was closest", a, one, []nodeID{n, a, b, c}, one},
		{"newcomer second, self closest", a, one, []nodeID{a, n, b, c}, one},
		{"newcomer r-th, self closest", a, one, []nodeID{a, b, n, c}, one},
		{"newcomer outside the r closest", a, one, []nodeID{a, b, c, n}, nil},
		{"newcomer not in view", a, one, []nodeID{a, b, c, d}, nil},
		{"self second of the others: the closest hands on", b, one, []nodeID{n, a, b, c}, nil},
		{"self last of the others", c, one, []nodeID{a, n, b, c}, nil},
		{"self is the newcomer", n, one, []nodeID{n, a, b}, nil},
		{"self not in view", d, one, []nodeID{n, a, b}, nil},
		{"empty view", a, one, nil, nil},
		{"fewer nodes than r", a, one, []nodeID{a, n}, one},
		{"two newcomers ahead of self", a, two, []nodeID{m, n, a, b}, []nodeID{m, n}},
		{"two newcomers, one beyond the r closest", a, two, []nodeID{n, a, b, m}, one},
		{"two newcomers ahead of another holder", b, two, []nodeID{m, n, a, b}, nil},
		{"no newcomers", a, nil, []nodeID{a, b, c}, nil},
	} {
		if got := replica.HandOnTo(tc.self, tc.newcomers, tc.view, 10, r); !slices.Equal(got, tc.want) {
			t.Errorf("%s: HandOnTo(%s, %v) = %v, want %v", tc.name, tc.self, tc.view, got, tc.want)
		}
	}
	// A node whose own view is filling (it knew fewer than r others) is
	// joining itself: it hands nothing on.
	for known, want := range [][]nodeID{nil, nil, nil, one, one} {
		if got := replica.HandOnTo(a, one, []nodeID{n, a, b, c}, known, r); !slices.Equal(got, want) {
			t.Errorf("knowing %d others: HandOnTo = %v, want %v", known, got, want)
		}
	}
}

// TestRepairTo: a job whose r closest lost a node is given to the node
// that entered the r closest in its place, by the closest live node only.
func TestRepairTo(t *testing.T) {
	const r = 3
	a, b, c, d, e, x, y := nodeID("a"), nodeID("b"), nodeID("c"), nodeID("d"), nodeID("e"), nodeID("x"), nodeID("y")
	one, two := []nodeID{x}, []nodeID{x, y}
	for _, tc := range []struct {
		name string
		self nodeID
		gone []nodeID
		view []nodeID
		want []nodeID
	}{
		{"the closest left, self next", a, one, []nodeID{x, a, b, c, d}, []nodeID{c}},
		{"second left, self closest", a, one, []nodeID{a, x, b, c, d}, []nodeID{c}},
		{"r-th left, self closest", a, one, []nodeID{a, b, x, c, d}, []nodeID{c}},
		{"gone beyond the r closest", a, one, []nodeID{a, b, c, x, d}, nil},
		{"gone not in view", a, one, []nodeID{a, b, c, d}, nil},
		{"self not the closest live: the closest repairs", b, one, []nodeID{x, a, b, c, d}, nil},
		{"self last of the live r", c, one, []nodeID{a, x, b, c, d}, nil},
		{"two left, self closest", a, two, []nodeID{x, a, y, b, c, d}, []nodeID{b, c}},
		{"two left, one beyond the r closest", a, two, []nodeID{a, x, b, y, c, d}, []nodeID{c}},
		{"too few live nodes to replace them", a, one, []nodeID{x, a, b}, nil},
		{"self alone left", a, two, []nodeID{x, y, a}, nil},
		{"no one left", a, nil, []nodeID{a, b, c, d}, nil},
		{"every node gone", a, two, []nodeID{x, y}, nil},
		{"empty view", a, one, nil, nil},
		{"self not in view", e, one, []nodeID{x, a, b, c}, nil},
	} {
		if got := replica.RepairTo(tc.self, tc.gone, tc.view, r); !slices.Equal(got, tc.want) {
			t.Errorf("%s: RepairTo(%s, %v, %v) = %v, want %v", tc.name, tc.self, tc.gone, tc.view, got, tc.want)
		}
	}
}

// TestPlanRound: the closest syncs to the other r − 1, the others to the
// closest, a node out of the r hands the job on to its closest and drops
// it only past the replica expiry.
func TestPlanRound(t *testing.T) {
	const self, a, b, c = nodeID("self"), nodeID("a"), nodeID("b"), nodeID("c")
	const now, expiry = 1_000_000, 60_000
	jobs := []replica.RoundJob[nodeID]{
		{Holding: replica.Holding{Key: "closest", Responsible: now - 1}, View: []nodeID{self, a, b}},
		{Holding: replica.Holding{Key: "second", Responsible: now - 1}, View: []nodeID{a, self, b}},
		{Holding: replica.Holding{Key: "linger", Responsible: now - expiry}, View: []nodeID{a, b, c}},
		{Holding: replica.Holding{Key: "drop", Responsible: now - expiry - 1}, View: []nodeID{b, a, c}},
		{Holding: replica.Holding{Key: "alone-out", Responsible: now - expiry - 1}, View: nil},
	}
	pl := replica.PlanRound(self, jobs, now, expiry)
	want := map[nodeID][]string{a: {"closest", "second", "linger"}, b: {"closest", "drop"}}
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
	if !slices.Equal(pl.Replicas["closest"], []nodeID{a, b}) || len(pl.Replicas) != 1 {
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
	const self, dead, a, b = nodeID("self"), nodeID("dead"), nodeID("a"), nodeID("b")
	for _, tt := range []struct {
		name   string
		view   []nodeID
		handed bool
		want   []nodeID
	}{
		{"now the closest", []nodeID{self, a, b}, false, []nodeID{a, b}},
		{"another closest", []nodeID{a, self, b}, false, []nodeID{a}},
		{"the dead still closest", []nodeID{dead, self, a}, false, nil},
		{"out, not handed", []nodeID{a, b}, false, nil},
		{"out, handed", []nodeID{a, b}, true, []nodeID{a}},
		{"out, handed, dead closest", []nodeID{dead, b}, true, nil},
		{"out, handed, nobody", nil, true, nil},
	} {
		if got := replica.Replan(self, dead, tt.view, tt.handed); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Replan = %v, want %v", tt.name, got, tt.want)
		}
	}
}
