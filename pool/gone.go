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
// Layout: "gone/<key>" holds the collection time and the time the record
// lapses; "goneq/<lapse, 8 bytes big-endian>/<key>" orders the records by
// lapse, so expiring them reads only those due.
const (
	goneNS  = "gone"
	goneQNS = "goneq"
)

// markGone adds to b the deletion of a collected job and its gone record,
// which keeps the collected state's proof (the project's signature); the
// keys only a sequence has (checkpoint, trickles, order) when seq.
func markGone(b *store.Batch, key []byte, seq bool, collectedAt, lapse int64, proof []byte) {
	b.Delete(store.Key(proofNS, key))
	dropExpired(b, key, seq)
	v := binary.BigEndian.AppendUint64(nil, uint64(collectedAt))
	v = binary.BigEndian.AppendUint64(v, uint64(lapse))
	v = append(v, proof...)
	b.Put(store.Key(goneNS, key), v)
	b.Put(store.Key(goneQNS, binary.BigEndian.AppendUint64(nil, uint64(lapse)), key), nil)
}

// gone reports whether key is a collected job this node deleted and still
// remembers, and the state to answer for it: collected at the time it was,
// with its proof.
func (p *Pool) gone(key []byte, now int64) (job.State, []byte, bool) {
	if !p.goneKeys.mayHold(key) {
		return job.State{}, nil, false
	}
	v, err := p.st.Get(store.Key(goneNS, key))
	if err != nil || len(v) < 16 {
		return job.State{}, nil, false
	}
	at, lapse := int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
	if now >= lapse || at <= 0 {
		return job.State{}, nil, false
	}
	var proof []byte
	if len(v) > 16 {
		proof = v[16:]
	}
	return job.State{Phase: job.Collected, At: at}, proof, true
}

// goneLapse is when the gone record of a job expiring at expires, deleted
// at now, lapses: once this node refuses the job as expired, and keep
// after now at least.
func goneLapse(expires, now, keep int64) int64 {
	return max(job.KeepUntil(expires), now+keep)
}

// dropExpired adds to b the deletion of a job whose lifetime ended; of
// the keys only a sequence has (checkpoint, trickles, order) when seq:
// a deletion of a key never written is a tombstone all the same, which
// every compaction carries until it meets the bottom of the store.
func dropExpired(b *store.Batch, key []byte, seq bool) {
	b.Delete(store.Key(jobNS, key))
	b.Delete(store.Key(stateNS, key))
	b.Delete(store.Key(resultNS, key))
	if seq {
		b.Delete(store.Key(ckptNS, key))
		b.Delete(store.Key(trickleNS, key))
		b.Delete(store.Key(orderNS, key))
	}
}

// sequenceKeys reports whether the job may have keys only a sequence has:
// it is one (its spec's steps, or an order's), or holds a checkpoint,
// trickles or an order.
func (e *entry) sequenceKeys() bool {
	return e.steps > 0 || e.ckptStep > 0 || e.trickles > 0 || e.orderRev > 0
}

// deletions batches an expiry pass's deletions: one store commit per
// expireBatch jobs, not one per job.
type deletions struct {
	p       *Pool
	b       *store.Batch
	keys    []string
	gone    []bool
	deleted int
}

// expireBatch is the most jobs one commit of an expiry pass deletes.
var expireBatch = 512

// newDeletions starts a pass's deletions; p.mu is held throughout.
func (p *Pool) newDeletions() *deletions { return &deletions{p: p} }

// batch is the batch the next deletion goes to.
func (d *deletions) batch() *store.Batch {
	if d.b == nil {
		d.b = d.p.st.NewBatch()
	}
	return d.b
}

// add records that the batch deletes job k (with a gone record if gone).
func (d *deletions) add(k string, gone bool) {
	d.keys = append(d.keys, k)
	d.gone = append(d.gone, gone)
}

func (d *deletions) full() bool { return len(d.keys) >= expireBatch }

// commit writes the batch and, once it is on disk, forgets its jobs here
// and adds their deletions to changes; a batch that fails changes
// nothing (its jobs are deleted by a later pass).
func (d *deletions) commit(changes []change) []change {
	if len(d.keys) == 0 {
		return changes
	}
	p := d.p
	if err := d.b.Commit(true); err != nil {
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
	d.b, d.keys, d.gone = nil, d.keys[:0], d.gone[:0]
	return changes
}

// expireGone deletes the gone records that lapsed by now, and those that
// lapse soonest while more than Config.MaxGone are kept; it returns how
// many.
func (p *Pool) expireGone(now int64) (int, error) {
	p.mu.Lock()
	over := p.goneN - p.cfg.MaxGone
	p.mu.Unlock()
	prefix := store.Key(goneQNS)
	b := p.st.NewBatch()
	err := p.st.Scan(prefix, func(k, _ []byte) bool {
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
		b.Delete(append([]byte(nil), k...))
		b.Delete(store.Key(goneNS, rest[9:]))
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("expire gone records: %w", err)
	}
	n := b.Len() / 2
	if n == 0 {
		return 0, nil
	}
	if err := b.Commit(true); err != nil {
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
