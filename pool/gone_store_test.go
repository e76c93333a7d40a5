package pool

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/store"
)

// putOldGone writes a gone record as nodes wrote them before gone
// stores: "gone/<key>" holding the collection time, the lapse and the
// proof, beside an empty "goneq/<lapse>/<key>", in the job store.
func putOldGone(t *testing.T, st *store.Store, key []byte, at, lapse int64, proof []byte) {
	t.Helper()
	v := binary.BigEndian.AppendUint64(nil, uint64(at))
	v = binary.BigEndian.AppendUint64(v, uint64(lapse))
	b := st.NewBatch()
	b.Put(store.Key(goneNS, key), append(v, proof...))
	b.Put(goneQKey(lapse, key), nil)
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}

// countKeys counts the keys of namespace ns in st.
func countKeys(t *testing.T, st *store.Store, ns string) int {
	t.Helper()
	n := 0
	if err := st.Scan(store.Key(ns), func(_, _ []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGoneMigratesOldRecords: gone records of the old layout (all in the
// job store) are moved on open — payloads to the gone store, indexes of
// 8 bytes left in the job store — in batches, and found gone with their
// collection time and proof; a second open moves nothing; a record
// already in the new layout is left as it was; expiry then deletes index
// and payload together. The same holds with one store for both. Control:
// the old records are not found gone before the move (the reader knows
// only today's layout), so the move is what keeps them.
func TestGoneMigratesOldRecords(t *testing.T) {
	defer func(n int) { expireBatch = n }(expireBatch)
	expireBatch = 3
	for _, apart := range []bool{true, false} {
		t.Run(fmt.Sprintf("gone store apart %v", apart), func(t *testing.T) {
			st, err := store.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			p := &Pool{st: st, goneKeys: newGoneFilter(0)}
			p.cfg.MaxGone = 100
			if apart {
				gs, err := store.Open(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer gs.Close()
				p.goneSt = gs
			}
			key := func(i int) []byte { return []byte(fmt.Sprintf("job%d", i)) }
			const old = 7
			for i := range old {
				putOldGone(t, st, key(i), int64(100+i), int64(1000+i), []byte(fmt.Sprintf("proof%d", i)))
			}
			nb := st.NewBatch()
			markGone(nb, nb, key(old), 0, 200, 2000, []byte("proof-new"))
			if p.goneSt != nil {
				gb := p.goneSt.NewBatch()
				markGone(st.NewBatch(), gb, key(old), 0, 200, 2000, []byte("proof-new"))
				if err := gb.Commit(true); err != nil {
					t.Fatal(err)
				}
				nb = st.NewBatch()
				nb.Put(store.Key(goneNS, key(old)), binary.BigEndian.AppendUint64(nil, 2000))
			}
			if err := nb.Commit(true); err != nil {
				t.Fatal(err)
			}
			if _, _, gone := p.gone(key(0), 0); gone {
				t.Fatal("control: an old-layout record read as today's")
			}

			if n, err := p.migrateGone(); err != nil || n != old {
				t.Fatalf("moved %d (%v), want %d", n, err, old)
			}
			if n, err := p.migrateGone(); err != nil || n != 0 {
				t.Fatalf("second open moved %d (%v), want 0", n, err)
			}
			if p.goneN, err = p.rebuildGone(); err != nil || p.goneN != old+1 {
				t.Fatalf("counted %d gone records (%v), want %d", p.goneN, err, old+1)
			}
			if apart && countKeys(t, st, goneQNS) != 0 {
				t.Fatalf("%d payloads left in the job store", countKeys(t, st, goneQNS))
			}
			if got := countKeys(t, p.goneStore(), goneQNS); got != old+1 {
				t.Fatalf("%d payloads in the gone store, want %d", got, old+1)
			}
			for i := range old + 1 {
				at, proof := int64(100+i), []byte(fmt.Sprintf("proof%d", i))
				if i == old {
					at, proof = 200, []byte("proof-new")
				}
				st, got, gone := p.gone(key(i), 0)
				if !gone || st.Phase != job.Collected || st.At != at || !bytes.Equal(got, proof) {
					t.Fatalf("job%d: gone %v, %s at %d, proof %q; want collected at %d, %q", i, gone, st.Phase, st.At, got, at, proof)
				}
			}

			if n, err := p.expireGone(1001); err != nil || n != 2 {
				t.Fatalf("expired %d (%v), want 2", n, err)
			}
			if countKeys(t, st, goneNS) != old-1 || countKeys(t, p.goneStore(), goneQNS) != old-1 {
				t.Fatalf("after expiry: %d indexes, %d payloads; want %d of each", countKeys(t, st, goneNS), countKeys(t, p.goneStore(), goneQNS), old-1)
			}
			if _, _, gone := p.gone(key(1), 0); gone {
				t.Fatal("an expired record is still found gone")
			}
		})
	}
}

// TestGoneWithoutPayload: an index whose payload was lost (a power
// failure under a sync interval) still says the job was deleted here —
// the node refuses it — with no state to tell.
func TestGoneWithoutPayload(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gs, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	p := &Pool{st: st, goneSt: gs, goneKeys: newGoneFilter(0)}
	d := p.newDeletions()
	p.goneKeys.add([]byte("job"))
	markGone(d.batch(), d.goneBatch(), []byte("job"), 0, 5, 1000, []byte("proof"))
	if err := d.b.Commit(true); err != nil { // the index alone reached the disk
		t.Fatal(err)
	}
	s, proof, gone := p.gone([]byte("job"), 0)
	if !gone || s.Phase == job.Collected || proof != nil {
		t.Fatalf("gone %v, %s, proof %q; want gone with the zero state", gone, s.Phase, proof)
	}
	if _, _, gone := p.gone([]byte("job"), 1000); gone {
		t.Fatal("gone past its lapse")
	}
}
