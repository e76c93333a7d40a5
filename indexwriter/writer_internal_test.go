package indexwriter

import (
	"maps"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
)

// TestWriterClaimedBounded: the writer's claimed set holds a job from
// leaving Ready until it is Ready again, finished, collected or gone from
// the pool; a job that runs its whole life through the node leaves
// nothing behind (the set grew by one key per job ever held before).
func TestWriterClaimedBounded(t *testing.T) {
	type change struct {
		st      job.State
		deleted bool
	}
	ready := change{st: job.State{Phase: job.Ready}}
	claimed := change{st: job.State{Phase: job.Claimed, Client: []byte("c"), Start: 1, Deadline: 2}}
	tomb := change{st: job.State{Phase: job.Ready, Client: []byte("c"), Start: 1}}
	finished := change{st: job.State{Phase: job.Finished}}
	collected := change{st: job.State{Phase: job.Collected, At: 3}}
	gone := change{deleted: true}
	for _, tc := range []struct {
		name    string
		changes []change
		want    bool // the job is in the claimed set after the changes
	}{
		{"ready", []change{ready}, false},
		{"claimed", []change{ready, claimed}, true},
		{"claimed and given back", []change{ready, claimed, tomb}, true}, // until the writer rewrites it with reset
		{"finished", []change{ready, claimed, finished}, false},
		{"collected", []change{ready, claimed, finished, collected}, false},
		{"collected and deleted", []change{ready, claimed, finished, collected, gone}, false},
		{"handed on while claimed", []change{ready, claimed, gone}, false},
		{"arrived collected", []change{collected}, false},
	} {
		w := &Writer{state: map[string]*written{}, dirty: map[string]bool{}, claimed: map[string]bool{}, kick: make(chan struct{}, 1)}
		for _, c := range tc.changes {
			w.onChange([]byte("job"), c.st, c.deleted)
		}
		if got := w.claimed["job"]; got != tc.want || len(w.claimed) > 1 {
			t.Errorf("%s: in the claimed set %v (%d keys), want %v", tc.name, got, len(w.claimed), tc.want)
		}
		if !w.dirty["job"] {
			t.Errorf("%s: the job is not marked for the next flush", tc.name)
		}
	}

	// A stream of jobs through their whole life leaves the set empty.
	w := &Writer{state: map[string]*written{}, dirty: map[string]bool{}, claimed: map[string]bool{}, kick: make(chan struct{}, 1)}
	for i := range 1000 {
		key := []byte{byte(i), byte(i >> 8)}
		for _, c := range []change{ready, claimed, finished, collected, gone} {
			w.onChange(key, c.st, c.deleted)
		}
	}
	if len(w.claimed) != 0 {
		t.Fatalf("%d keys left in the claimed set after 1000 jobs went through", len(w.claimed))
	}
}

// TestPlanGone: a flush (gone set) withdraws and forgets exactly the gone
// jobs that are not held, whatever else the writer lists; a round (gone
// nil) every job not held.
func TestPlanGone(t *testing.T) {
	newWriter := func() *Writer {
		w := &Writer{state: map[string]*written{}, backups: map[string]int64{}, swept: map[string]sweep{}}
		for _, k := range []string{"a", "b", "c", "d"} {
			w.state[k] = &written{where: map[string]placed{"kw": {at: peer.ID("n-" + k)}}}
			w.backups[k] = 1
		}
		w.swept["e"] = sweep{}
		w.swept["b"] = sweep{}
		return w
	}
	withdrawn := func(pl *plan) []string {
		var ks []string
		for _, ops := range pl.withdraws {
			for _, o := range ops {
				ks = append(ks, o.key)
			}
		}
		slices.Sort(ks)
		return ks
	}
	left := func(w *Writer) []string { return slices.Sorted(maps.Keys(w.state)) }
	for _, tc := range []struct {
		name              string
		held, gone        map[string]bool
		wantOut, wantLeft []string
		wantSwept         []string
	}{
		{"flush", map[string]bool{"a": true}, map[string]bool{"b": true, "x": true}, []string{"b"}, []string{"a", "c", "d"}, []string{"e"}},
		{"flush of a held job", map[string]bool{"b": true}, map[string]bool{"b": true}, nil, []string{"a", "b", "c", "d"}, []string{"b", "e"}},
		{"round", map[string]bool{"a": true, "c": true}, nil, []string{"b", "d"}, []string{"a", "c"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWriter()
			pl := &plan{withdraws: map[peer.ID][]op{}}
			w.planGone(tc.held, tc.gone, pl)
			if got := withdrawn(pl); !slices.Equal(got, tc.wantOut) {
				t.Errorf("withdrawn %v, want %v", got, tc.wantOut)
			}
			if got := left(w); !slices.Equal(got, tc.wantLeft) {
				t.Errorf("listed after %v, want %v", got, tc.wantLeft)
			}
			if got := slices.Sorted(maps.Keys(w.swept)); !slices.Equal(got, tc.wantSwept) {
				t.Errorf("swept after %v, want %v", got, tc.wantSwept)
			}
			for _, k := range tc.wantOut {
				if _, ok := w.backups[k]; ok {
					t.Errorf("backup of %s kept", k)
				}
			}
		})
	}
}
