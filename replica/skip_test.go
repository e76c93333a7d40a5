package replica_test

import (
	"testing"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/replica"
)

// TestSkipSync: only a collected job synced to the same view, with the
// same collected state, is skipped, and never in a full round.
func TestSkipSync(t *testing.T) {
	collected := job.State{Phase: job.Collected, At: 7}
	for _, c := range []struct {
		name     string
		st       job.State
		syncedAt int64
		synced   uint64
		view     uint64
		full     bool
		want     bool
	}{
		{"collected, synced to the same view", collected, 7, 11, 11, false, true},
		{"a full round", collected, 7, 11, 11, true, false},
		{"never synced", collected, 0, 0, 11, false, false},
		{"another view", collected, 7, 11, 13, false, false},
		{"another collected state", collected, 6, 11, 11, false, false},
		{"finished", job.State{Phase: job.Finished, At: 7}, 7, 11, 11, false, false},
		{"ready", job.State{Phase: job.Ready}, 0, 11, 11, false, false},
	} {
		if got := replica.SkipSync(c.st, c.syncedAt, c.synced, c.view, c.full); got != c.want {
			t.Errorf("%s: skip %v, want %v", c.name, got, c.want)
		}
	}
}
