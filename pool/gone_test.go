package pool

import (
	"fmt"
	"testing"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/store"
)

// TestGoneLapse: a deleted key is remembered until the job's expiry plus
// the margin on this node's clock, and GoneKeep at least.
func TestGoneLapse(t *testing.T) {
	const hour = int64(3_600_000)
	for _, tc := range []struct {
		name               string
		expires, now, keep int64
		want               int64
	}{
		{"expiry far off", 100 * hour, 10 * hour, 2 * hour, 100*hour + job.ExpiryMarginMS},
		{"expiry within GoneKeep", 11 * hour, 10 * hour, 2 * hour, 12 * hour},
		{"expiry passed", 5 * hour, 10 * hour, 2 * hour, 12 * hour},
	} {
		if got := goneLapse(tc.expires, tc.now, tc.keep); got != tc.want {
			t.Errorf("%s: lapse %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestGoneBounded: past MaxGone records, those that lapse soonest are
// forgotten first; the count survives a reload.
func TestGoneBounded(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := &Pool{cfg: Config{MaxGone: 3}, st: st}
	b := st.NewBatch()
	for i := range 5 {
		markGone(b, b, []byte(fmt.Sprintf("job%d", i)), sequenceKeys|proofApart, 1, int64(1000+i), nil)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if p.goneN, err = p.rebuildGone(); err != nil || p.goneN != 5 {
		t.Fatalf("counted %d gone records (%v), want 5", p.goneN, err)
	}
	if n, err := p.expireGone(0); err != nil || n != 2 {
		t.Fatalf("trimmed %d (%v), want 2", n, err)
	}
	for i := range 5 {
		_, _, kept := p.gone([]byte(fmt.Sprintf("job%d", i)), 0)
		if kept != (i >= 2) {
			t.Errorf("job%d kept %v, want the 3 that lapse last", i, kept)
		}
	}
	if n, err := p.expireGone(1003); err != nil || n != 2 || p.goneN != 1 {
		t.Fatalf("lapsed %d (%v), %d left; want 2, 1", n, err, p.goneN)
	}
}
