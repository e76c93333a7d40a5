package indexwriter

import (
	"testing"

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
