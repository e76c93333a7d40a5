package pool

import (
	"encoding/binary"
	"fmt"

	"github.com/up-pool/up/job"
	"github.com/up-pool/up/store"
)

// Gone records. A collected job is deleted T_collect after collection; a
// replica that missed every later state (it was down, or outside the
// claim's nodes, through all of T_collect's republish rounds) still holds
// it as ready, and would store it anew on the nodes that deleted it: the
// job would come back and run again. So a node that deletes a collected
// job remembers its key, on disk only, until the job expires
// (job.KeepUntil of its project-signed expiry, on this node's clock), and
// Config.GoneKeep at least: it answers a sync of the key with the
// collected state, which the stale replica merges and then deletes in
// turn, and refuses to store the job again. From the lapse on the node
// refuses the job as expired by the same rule on the same clock, so a
// replica down for any time cannot bring it back. At most Config.MaxGone
// records are kept; past that, those that lapse soonest go first.
//
// Layout: a record is in two parts. Its payload — the collection time and
// the collected state's proof — is in the gone store (Deps.GoneStore; the
// job store when none) under "goneq/<lapse, 8 bytes big-endian>/<key>":
// ordered by lapse, so expiring records reads only those due, and, since
// records are added with lapses that grow with the time they are written,
// a new record lands at the end of the order: the gone store's flushed
// tables seldom overlap the older ones, and pebble moves them down its
// levels instead of rewriting them. Its index, "gone/<key>" in the job
// store, holds the lapse alone (8 bytes), written in the batch that
// deletes the job: a job is deleted exactly when its index is on disk.
// Before gone stores, a record was "gone/<key>" holding the collection
// time, the lapse and the proof, beside an empty "goneq/<lapse>/<key>",
// both in the job store: random keys that every compaction of the job
// store rewrote, growing with the records kept (migrateGone moves them).
//
// The payload is committed before the index (deletions.commit): a crash
// between leaves a payload without index, which lapses as any other. A
// power failure under a store sync interval may keep an index whose
// payload was lost: the node still refuses the job (the index says it
// deleted it, this node's own decision, no proof needed) but has no proof
// to answer a stale replica's sync with, which then learns the collected
// state from the job's other nodes.
const (
	goneNS  = "gone"
	goneQNS = "goneq"
)

// markGone adds to b the deletion of a collected job (its keys as keys
// says) and its gone record's index (its lapse), and to gb the record's
// payload: when it was collected and the collected state's proof (the
// project's signature). b and gb may be one batch (the job store keeps
// the payloads).
func markGone(b, gb *store.Batch, key []byte, keys heldKeys, collectedAt, lapse int64, proof []byte) {
	dropExpired(b, key, keys)
	b.Put(store.Key(goneNS, key), binary.BigEndian.AppendUint64(nil, uint64(lapse)))
	gb.Put(goneQKey(lapse, key), goneValue(collectedAt, proof))
}

// goneQKey is the key of the payload of key's gone record lapsing at lapse.
func goneQKey(lapse int64, key []byte) []byte {
	return store.Key(goneQNS, binary.BigEndian.AppendUint64(nil, uint64(lapse)), key)
}

// goneValue is a gone record's payload: the collection time (8 bytes
// big-endian) and the proof.
func goneValue(collectedAt int64, proof []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(proof)), uint64(collectedAt)), proof...)
}

// goneStore is where the payloads of gone records are: Deps.GoneStore,
// else the job store.
func (p *Pool) goneStore() *store.Store {
	if p.goneSt != nil {
		return p.goneSt
	}
	return p.st
}

// gone reports whether key is a collected job this node deleted and still
// remembers, and the state to answer for it: collected at the time it was,
// with its proof; the zero state when the record's payload was lost.
func (p *Pool) gone(key []byte, now int64) (job.State, []byte, bool) {
	if !p.goneKeys.mayHold(key) {
		return job.State{}, nil, false
	}
	lapse, ok := p.goneIndex(key)
	if !ok || now >= lapse {
		return job.State{}, nil, false
	}
	v, err := p.goneStore().Get(goneQKey(lapse, key))
	if err != nil || len(v) < 8 {
		// The payload was lost (goneNS): the job stays deleted here, with
		// no state to tell (the zero state); its other nodes answer a
		// stale replica with the proof.
		return job.State{}, nil, true
	}
	at := int64(binary.BigEndian.Uint64(v))
	if at <= 0 {
		return job.State{}, nil, false
	}
	var proof []byte
	if len(v) > 8 {
		proof = v[8:]
	}
	return job.State{Phase: job.Collected, At: at}, proof, true
}

// goneIndex is the lapse the index of key's gone record holds.
func (p *Pool) goneIndex(key []byte) (int64, bool) {
	v, err := p.st.Get(store.Key(goneNS, key))
	if err != nil || len(v) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v)), true
}

// goneLapse is when the gone record of a job expiring at expires, deleted
// at now, lapses: once this node refuses the job as expired, and keep
// after now at least.
func goneLapse(expires, now, keep int64) int64 {
	return max(job.KeepUntil(expires), now+keep)
}

// heldKeys says which keys a held job may have beyond its record, state
// and result: a deletion of a key never written is a tombstone all the
// same, which every compaction carries until it meets the bottom of the
// store.
type heldKeys uint8

const (
	// sequenceKeys: a checkpoint, trickles, an order (a sequence's).
	sequenceKeys heldKeys = 1 << iota
	// proofApart: a proof under proofNS, as written before proofs went
	// into the state record.
	proofApart
)

// dropExpired adds to b the deletion of a job whose lifetime ended, of
// the keys keys says it may have.
func dropExpired(b *store.Batch, key []byte, keys heldKeys) {
	b.Delete(store.Key(jobNS, key))
	b.Delete(store.Key(stateNS, key))
	b.Delete(store.Key(resultNS, key))
	if keys&proofApart != 0 {
		b.Delete(store.Key(proofNS, key))
	}
	if keys&sequenceKeys != 0 {
		b.Delete(store.Key(ckptNS, key))
		b.Delete(store.Key(trickleNS, key))
		b.Delete(store.Key(orderNS, key))
	}
}

// keys is which keys e's job may have beyond record, state and result: a
// sequence's when it is one (its spec's steps, or an order's) or holds a
// checkpoint, trickles or an order; a proof apart when one was loaded so.
func (e *entry) keys() heldKeys {
	var k heldKeys
	if e.steps > 0 || e.ckptStep > 0 || e.trickles > 0 || e.orderRev > 0 {
		k |= sequenceKeys
	}
	if e.proofApart {
		k |= proofApart
	}
	return k
}

// deletions batches an expiry pass's deletions: one store commit per
// expireBatch jobs, not one per job.
type deletions struct {
	goneBatches
	keys    []string
	gone    []bool
	deleted int
}

// goneBatches are one commit's two batches: the job store's (deletions,
// gone records' indexes) and the gone store's (their payloads; the same
// batch when one store keeps both), committed payloads first.
type goneBatches struct {
	p     *Pool
	b, gb *store.Batch
}

// expireBatch is the most jobs one commit of an expiry pass deletes.
var expireBatch = 512

// newDeletions starts a pass's deletions; p.mu is held throughout.
func (p *Pool) newDeletions() *deletions { return &deletions{goneBatches: goneBatches{p: p}} }

// batch is the job store's batch.
func (g *goneBatches) batch() *store.Batch {
	if g.b == nil {
		g.b = g.p.st.NewBatch()
	}
	return g.b
}

// goneBatch is the batch gone records' payloads go to.
func (g *goneBatches) goneBatch() *store.Batch {
	if g.gb == nil {
		if gs := g.p.goneStore(); gs != g.p.st {
			g.gb = gs.NewBatch()
		} else {
			g.gb = g.batch()
		}
	}
	return g.gb
}

// commit writes the payloads, then the job store's batch, and starts
// afresh.
func (g *goneBatches) commit() error {
	var err error
	if g.gb != nil && g.gb != g.b {
		err = g.gb.Commit(true)
	}
	if err == nil && g.b != nil {
		err = g.b.Commit(true)
	}
	g.b, g.gb = nil, nil
	return err
}

// add records that the batch deletes job k (with a gone record if gone).
func (d *deletions) add(k string, gone bool) {
	d.keys = append(d.keys, k)
	d.gone = append(d.gone, gone)
}

func (d *deletions) full() bool { return len(d.keys) >= expireBatch }

// commit writes the gone records' payloads, then the batch and, once it
// is on disk, forgets its jobs here and adds their deletions to changes;
// a batch that fails changes nothing (its jobs are deleted by a later
// pass; payloads written without it lapse as any other).
func (d *deletions) commit(changes []change) []change {
	if len(d.keys) == 0 {
		return changes
	}
	p := d.p
	if err := d.goneBatches.commit(); err != nil {
		p.log.Warn("expire", "jobs", len(d.keys), "err", err)
	} else {
		for i, k := range d.keys {
			if d.gone[i] {
				p.goneN++
			}
			p.unhold(k)
			d.deleted++
			p.mDropped.Inc()
			changes = append(changes, change{key: []byte(k), deleted: true})
		}
	}
	d.keys, d.gone = d.keys[:0], d.gone[:0]
	return changes
}

// expireGone deletes the gone records that lapsed by now, and those that
// lapse soonest while more than Config.MaxGone are kept; it returns how
// many. The indexes go first: a payload left by a failed commit is found
// again by the next pass, an index without its payload would not be.
func (p *Pool) expireGone(now int64) (int, error) {
	p.mu.Lock()
	over := p.goneN - p.cfg.MaxGone
	p.mu.Unlock()
	gs := p.goneStore()
	prefix := store.Key(goneQNS)
	b, gb := p.st.NewBatch(), gs.NewBatch()
	n := 0
	err := gs.Scan(prefix, func(k, _ []byte) bool {
		rest := k[len(prefix):]
		if len(rest) < 9 {
			return true
		}
		if int64(binary.BigEndian.Uint64(rest)) > now {
			if over <= 0 {
				return false // ordered by lapse: the rest are not due
			}
			over--
		}
		b.Delete(store.Key(goneNS, rest[9:]))
		gb.Delete(append([]byte(nil), k...))
		n++
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("expire gone records: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	if err := b.Commit(true); err != nil {
		return 0, fmt.Errorf("expire %d gone records' indexes: %w", n, err)
	}
	if err := gb.Commit(true); err != nil {
		return 0, fmt.Errorf("expire %d gone records: %w", n, err)
	}
	p.mu.Lock()
	p.goneN = max(p.goneN-n, 0)
	p.mu.Unlock()
	return n, nil
}

// refreshGoneFilter rebuilds the gone filter when more keys were added to
// it than it was sized for (lapsed records leave it only then).
func (p *Pool) refreshGoneFilter() {
	if !p.goneKeys.full() {
		return
	}
	if _, err := p.rebuildGone(); err != nil {
		p.log.Warn("expire", "err", err)
	}
}

// migrateGone moves gone records written before gone stores (one
// "gone/<key>" holding the collection time, the lapse and the proof,
// beside an empty "goneq/<lapse>/<key>", both in the job store) to the
// layout of today, a batch of expireBatch records at a time, payloads
// before indexes: a record is whole in one layout or the other at every
// commit, so a crash midway leaves the rest to the next open. It returns
// how many it moved.
func (p *Pool) migrateGone() (int, error) {
	g := goneBatches{p: p}
	moved, pending := 0, 0
	var cerr error
	commit := func() {
		if pending == 0 || cerr != nil {
			return
		}
		if cerr = g.commit(); cerr == nil {
			moved += pending
		}
		pending = 0
	}
	apart := p.goneStore() != p.st
	prefix := store.Key(goneNS)
	err := p.st.Scan(prefix, func(k, v []byte) bool {
		if len(v) < 16 {
			return true // an index: migrated, or written so
		}
		key := k[len(prefix):]
		at, lapse := int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
		g.goneBatch().Put(goneQKey(lapse, key), goneValue(at, v[16:]))
		g.batch().Put(append([]byte(nil), k...), binary.BigEndian.AppendUint64(nil, uint64(lapse)))
		if apart {
			g.batch().Delete(goneQKey(lapse, key))
		}
		if pending++; pending >= expireBatch {
			commit()
		}
		return cerr == nil
	})
	commit()
	if err == nil {
		err = cerr
	}
	if err != nil {
		return moved, fmt.Errorf("move gone records to the gone store: %w", err)
	}
	return moved, nil
}
