package pool

import (
	"fmt"
	"testing"

	"github.com/up-pool/up/store"
)

// TestGoneFilterNeverMisses: every key whose gone record is on disk is
// found gone — across a rebuild (three times the filter's size added) and
// a reload from the store — while about 1 % of keys never deleted here
// pass the filter to the store. Control: a filter the keys were not added
// to hides their records.
func TestGoneFilterNeverMisses(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := &Pool{st: st, goneKeys: newGoneFilter(0)}
	const n = 3 * goneFilterMin
	key := func(i int) []byte { return []byte(fmt.Sprintf("job%d", i)) }
	for from := 0; from < n; from += 4096 {
		b := st.NewBatch()
		for i := from; i < min(from+4096, n); i++ {
			p.goneKeys.add(key(i))
			markGone(b, b, key(i), sequenceKeys|proofApart, 1, 1<<50, nil)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	if !p.goneKeys.full() {
		t.Fatalf("%d keys added to a filter sized for %d, not full", n, p.goneKeys.size)
	}
	p.refreshGoneFilter()
	if p.goneKeys.full() || p.goneKeys.size < n {
		t.Fatalf("after the rebuild: full %v, sized for %d, want room for %d", p.goneKeys.full(), p.goneKeys.size, n)
	}
	reloaded := &Pool{st: st}
	if got, err := reloaded.rebuildGone(); err != nil || got != n {
		t.Fatalf("reload counted %d gone records (%v), want %d", got, err, n)
	}
	for _, q := range []*Pool{p, reloaded} {
		for i := range n {
			if _, _, gone := q.gone(key(i), 0); !gone {
				t.Fatalf("job%d has a gone record on disk but is not found gone", i)
			}
		}
	}
	passed := 0
	for i := n; i < n+10_000; i++ {
		if p.goneKeys.mayHold(key(i)) {
			passed++
		}
	}
	if passed > 300 {
		t.Fatalf("%d of 10,000 keys never deleted passed the filter, want ~1 %%", passed)
	}
	blind := &Pool{st: st, goneKeys: newGoneFilter(0)}
	if _, _, gone := blind.gone(key(0), 0); gone {
		t.Fatal("control: a filter without the key still found its record (the filter is not consulted)")
	}
}
