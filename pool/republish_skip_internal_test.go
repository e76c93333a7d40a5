package pool

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/job"
)

func TestViewHash(t *testing.T) {
	a, b := peer.ID("a"), peer.ID("b")
	ep := map[peer.ID]uint64{a: 1, b: 2}
	h := viewHash([]peer.ID{a, b}, ep)
	if h == 0 || h != viewHash([]peer.ID{a, b}, ep) {
		t.Fatal("view hash is 0 or not deterministic")
	}
	if h == viewHash([]peer.ID{b, a}, ep) {
		t.Fatal("view hash ignores the order (the closest syncs differently)")
	}
	if h == viewHash([]peer.ID{a, b}, map[peer.ID]uint64{a: 1, b: 3}) {
		t.Fatal("view hash ignores a peer admitted anew")
	}
	var v viewEpochs
	v.admitted(a)
	first := v.snapshot()[a]
	v.admitted(a)
	if v.snapshot()[a] == first {
		t.Fatal("a second admission kept the peer's number")
	}
}

// TestMarkCollectedSynced: a job is marked synced to its view only when
// every target took it: none failed, none lacked it and did not store it,
// and its state here is still the one sent.
func TestMarkCollectedSynced(t *testing.T) {
	collected := job.State{Phase: job.Collected, At: 7}
	a, b := peer.ID("a"), peer.ID("b")
	for _, c := range []struct {
		name     string
		failed   map[peer.ID]bool
		unsynced map[string]bool
		now      job.State
		want     bool
	}{
		{"every target took it", nil, nil, collected, true},
		{"a target failed", map[peer.ID]bool{b: true}, nil, collected, false},
		{"a target lacked it and did not store it", nil, map[string]bool{"k": true}, collected, false},
		{"its state changed since", nil, nil, job.State{Phase: job.Collected, At: 8}, false},
	} {
		p := &Pool{jobs: map[string]*entry{"k": {state: c.now}}}
		rs := roundSkips{views: map[string]uint64{"k": 11}, sent: map[string]job.State{"k": collected}, targets: map[string][]peer.ID{"k": {a, b}}}
		p.markCollectedSynced(rs, &RoundStats{failed: c.failed, unsynced: c.unsynced})
		if got := p.jobs["k"].syncedView == 11; got != c.want {
			t.Errorf("%s: marked %v, want %v", c.name, got, c.want)
		}
	}
}
