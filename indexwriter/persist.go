package indexwriter

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/up-pool/up/codec"
	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/store"
)

// placedNS is the store namespace of the writer's placements: job key →
// where its entries are (placedRecord). A restarted writer reads them
// back, so it withdraws the entries of a job claimed while it was down,
// and rewrites a listable job's entries where they are, instead of
// forgetting them (orphans the index would serve until they expire) and
// placing new ones elsewhere.
const placedNS = "idxplaced"

// placedRecord is one entry's place as persisted.
type placedRecord struct {
	_       struct{} `cbor:",toarray"`
	Keyword string
	At      []byte // the index node's peer ID
	Point   []byte // the region point (32 bytes)
}

// maxPlacedRecords bounds the entries read back per job (a job has at
// most job.MaxKeywords keywords plus its finished keyword).
const maxPlacedRecords = 64

// loadPlacements fills w.state from the store: every entry is due for
// its rewrite (next 0), so the first full round reconciles it.
func (w *Writer) loadPlacements() error {
	if w.st == nil {
		return nil
	}
	return w.st.Scan(store.Key(placedNS), func(k, v []byte) bool {
		key := string(k[len(placedNS)+1:])
		var recs []placedRecord
		if err := codec.Unmarshal(v, &recs); err != nil || len(recs) > maxPlacedRecords {
			return true // a record this version cannot read: the entries expire at their index nodes
		}
		st := &written{where: map[string]placed{}}
		for _, r := range recs {
			at, err := peer.IDFromBytes(r.At)
			if err != nil || len(r.Point) != len(keyspace.Pos{}) {
				continue
			}
			var pos keyspace.Pos
			copy(pos[:], r.Point)
			st.where[r.Keyword] = placed{at: at, point: pos}
		}
		if len(st.where) > 0 {
			w.state[key] = st
		}
		return true
	})
}

// markPlaced notes that a job's placements changed, to be persisted at
// the end of the round. w.mu is held.
func (w *Writer) markPlaced(key string) {
	if w.st != nil {
		w.placedDirty[key] = true
	}
}

// savePlacements persists the placements changed since the last save, in
// one batch, not synced: a crash loses at most the latest round's moves,
// whose entries then expire at their index nodes as before.
func (w *Writer) savePlacements() error {
	if w.st == nil {
		return nil
	}
	w.mu.Lock()
	b := w.st.NewBatch()
	for key := range w.placedDirty {
		sk := store.Key(placedNS, []byte(key))
		st := w.state[key]
		if st == nil || len(st.where) == 0 {
			b.Delete(sk)
			continue
		}
		recs := make([]placedRecord, 0, len(st.where))
		for kw, p := range st.where {
			recs = append(recs, placedRecord{Keyword: kw, At: []byte(p.at), Point: p.point[:]})
		}
		v, err := codec.Marshal(recs)
		if err != nil {
			w.mu.Unlock()
			return fmt.Errorf("index writer: placements of %x: %w", key, err)
		}
		b.Put(sk, v)
	}
	clear(w.placedDirty)
	w.mu.Unlock()
	if b.Len() == 0 {
		return nil
	}
	if err := b.Commit(false); err != nil {
		return fmt.Errorf("index writer: save placements: %w", err)
	}
	return nil
}
